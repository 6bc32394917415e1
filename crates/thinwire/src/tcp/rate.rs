//! Delivery-rate samples, as Linux 6.x's `net/ipv4/tcp_rate.c`
//! (draft-cheng-iccrg-delivery-rate-estimation), for controllers that are fed
//! them (BBR). Counted in segments as the kernel counts skbs.
//!
//! - When a segment is sent (`on_sent`, `tcp_rate_skb_sent`) it records the
//!   connection's delivered count, when that count last grew, when the current
//!   sending interval began (`first_tx`; restarted when nothing is in flight),
//!   and whether the sender is application-limited.
//! - Of the segments an ACK delivers (`on_delivered`, `tcp_rate_skb_delivered`),
//!   the most recently sent supplies the sample's start: its recorded count and
//!   time, and its send interval.
//! - At the end of the ACK (`generate`, `tcp_rate_gen`): delivered = count now −
//!   count then; interval = max(send interval, time since that count); a sample
//!   shorter than the minimum RTT is discarded; the application-limited mark
//!   clears once the data sent while limited is delivered.
//!
//! No parameters.
use crate::time::{Duration, Instant};

/// What a segment remembers of the connection when it was sent (Linux
/// `tcp_skb_cb.tx`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxState {
    pub(crate) first_tx: Instant,
    pub(crate) delivered_at: Instant,
    pub(crate) delivered: u64,
    pub(crate) app_limited: bool,
    /// Recorded (rate sampling was on when it was sent).
    pub(crate) valid: bool,
}

/// One ACK's rate sample (Linux `struct rate_sample`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RateSample {
    /// Segments delivered over `interval`; None when no sample could be taken.
    pub delivered: Option<u64>,
    pub interval: Option<Duration>,
    /// Segments this ACK newly acknowledged or SACKed, and newly deemed lost.
    pub acked_sacked: u64,
    pub losses: u64,
    pub is_app_limited: bool,
    /// The RTT of the most recently sent segment this ACK delivered that was
    /// never sent again (Linux `rs->rtt_us`, the `ca_rtt`).
    pub rtt: Option<Duration>,
    /// Segments in flight before the ACK.
    pub prior_in_flight: u64,
    /// The count when the sample's segment was sent.
    pub prior_delivered: u64,
    prior_at: Option<Instant>,
    rtt_xmit: Option<Instant>,
    send_interval: Duration,
    last_xmit: Option<(Instant, u64)>,
}

/// The connection's counts (Linux `tp->delivered`, `delivered_mstamp`,
/// `first_tx_mstamp`, `app_limited`, `lost`).
#[derive(Clone, Debug, Default)]
pub struct RateState {
    pub(crate) delivered: u64,
    pub(crate) delivered_at: Instant,
    pub(crate) first_tx: Instant,
    /// Non-zero: application-limited until `delivered` passes it.
    pub(crate) app_limited: u64,
    pub(crate) lost: u64,
    /// `lost` when the ACK being processed began.
    lost_before: u64,
    /// The smallest RTT sample (Linux `tcp_min_rtt`; its 5-minute window is
    /// longer than any run here).
    pub(crate) min_rtt: Option<Duration>,
    pub(crate) rs: RateSample,
}

impl RateState {
    /// `tcp_rate_skb_sent`: a segment leaves at `now` with `in_flight` segments
    /// already out.
    pub(crate) fn on_sent(&mut self, now: Instant, in_flight: u64) -> TxState {
        if in_flight == 0 {
            self.first_tx = now;
            self.delivered_at = now;
        }
        TxState {
            first_tx: self.first_tx,
            delivered_at: self.delivered_at,
            delivered: self.delivered,
            app_limited: self.app_limited != 0,
            valid: true,
        }
    }

    /// An ACK starts being processed.
    pub(crate) fn start_ack(&mut self, in_flight: u64) {
        self.rs = RateSample { prior_in_flight: in_flight, ..RateSample::default() };
        self.lost_before = self.lost;
    }

    /// `tcp_rate_skb_delivered` and the count (`tcp_count_delivered`): a segment
    /// sent at `xmit` (ending at `end`, `retx` if ever sent again) is delivered.
    pub(crate) fn on_delivered(&mut self, now: Instant, xmit: Instant, end: u64, retx: bool, tx: &TxState) {
        self.delivered += 1;
        self.rs.acked_sacked += 1;
        if !retx && self.rs.rtt_xmit.is_none_or(|t| xmit >= t) {
            self.rs.rtt_xmit = Some(xmit);
            self.rs.rtt = Some(now - xmit);
        }
        if !tx.valid {
            return;
        }
        let later = match self.rs.last_xmit {
            None => true,
            Some((t, e)) => xmit > t || (xmit == t && end > e),
        };
        if later {
            self.rs.prior_delivered = tx.delivered;
            self.rs.prior_at = Some(tx.delivered_at);
            self.rs.is_app_limited = tx.app_limited;
            self.rs.last_xmit = Some((xmit, end));
            self.first_tx = xmit;
            self.rs.send_interval = xmit - tx.first_tx;
        }
    }

    /// `tcp_rate_gen` at the end of the ACK.
    pub(crate) fn generate(&mut self, now: Instant) {
        if let Some(r) = self.rs.rtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        let min_rtt = self.min_rtt;
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        if self.rs.acked_sacked > 0 {
            self.delivered_at = now;
        }
        self.rs.losses = self.lost - self.lost_before;
        let Some(prior_at) = self.rs.prior_at else { return };
        let interval = self.rs.send_interval.max(now - prior_at);
        if min_rtt.is_some_and(|m| interval < m) || interval == Duration::ZERO {
            return;
        }
        self.rs.delivered = Some(self.delivered - self.rs.prior_delivered);
        self.rs.interval = Some(interval);
    }

    /// `tcp_rate_check_app_limited`: the sender has nothing more to send and its
    /// window is not full.
    pub(crate) fn mark_app_limited(&mut self, in_flight: u64) {
        self.app_limited = (self.delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flight of four segments sent 10 ms apart from a standing start, all
    /// delivered by one ACK 100 ms after the last was sent: the sample is 4
    /// segments over max(send interval 30 ms, ACK interval 130 ms).
    #[test]
    fn a_sample_spans_the_longer_of_the_two_intervals() {
        let ms = |x| Instant::ZERO + Duration::from_millis(x);
        let mut r = RateState::default();
        let tx: Vec<TxState> = (0..4).map(|i| r.on_sent(ms(10 * i), i as u64)).collect();
        r.start_ack(4);
        for (i, t) in tx.iter().enumerate() {
            r.on_delivered(ms(130), ms(10 * i as i64), 1000 * (i as u64 + 1), false, t);
        }
        r.min_rtt = Some(Duration::from_millis(50));
        r.generate(ms(130));
        assert_eq!(r.rs.delivered, Some(4));
        assert_eq!(r.rs.interval, Some(Duration::from_millis(130)));
        assert_eq!(r.rs.rtt, Some(Duration::from_millis(100)));
        // A sample shorter than the minimum RTT is discarded (a retransmission's
        // ACK gives no RTT sample to lower it).
        let mut q = RateState::default();
        let t = q.on_sent(ms(0), 0);
        q.start_ack(1);
        q.on_delivered(ms(20), ms(0), 1000, true, &t);
        q.min_rtt = Some(Duration::from_millis(50));
        q.generate(ms(20));
        assert_eq!(q.rs.delivered, None);
    }

    /// Data sent while application-limited makes its samples application-limited,
    /// until it has been delivered.
    #[test]
    fn app_limited_marks_clear_after_delivery() {
        let ms = |x| Instant::ZERO + Duration::from_millis(x);
        let mut r = RateState::default();
        let t1 = r.on_sent(ms(0), 0);
        r.mark_app_limited(1);
        let t2 = r.on_sent(ms(1), 1);
        assert!(!t1.app_limited && t2.app_limited);
        r.start_ack(2);
        r.on_delivered(ms(100), ms(0), 1000, false, &t1);
        r.on_delivered(ms(100), ms(1), 2000, false, &t2);
        r.generate(ms(100));
        assert!(r.rs.is_app_limited, "the latest segment sent was limited");
        assert_eq!(r.app_limited, 0, "the limited data is delivered");
    }
}
