//! Proportional Rate Reduction (RFC 6937) on RFC 6675's SACK recovery, as Linux 6.x
//! runs it (`tcp_cwnd_reduction` in `net/ipv4/tcp_input.c`, with the RFC 6937bis
//! changes): the same loss detection and choice of what to send as `sack`
//! (`sack.rs`), but the window during recovery follows the data delivered instead
//! of dropping to ssthresh at once. On every ACK in recovery, with `DeliveredData`
//! the packets it newly acknowledged or SACKed (a duplicate ACK without SACK counts
//! one, as Linux's Reno emulation does):
//! - `prr_delivered` += DeliveredData;
//! - while the pipe exceeds ssthresh (proportional part), sndcnt =
//!   ⌈ssthresh·prr_delivered / RecoverFS⌉ − prr_out, so about ssthresh/RecoverFS of
//!   a packet goes out per packet delivered;
//! - otherwise (slow-start reduction bound) sndcnt = min(ssthresh − pipe,
//!   max(prr_delivered − prr_out, DeliveredData) + 1 if the ACK advanced `snd_una`);
//! - at least one packet on entering (the fast retransmission);
//! - cwnd = pipe + sndcnt, and every packet sent in recovery adds to `prr_out`.
//!
//! RecoverFS is the window when recovery began (Linux's `prior_cwnd`; the RFC writes
//! the flight, equal for a sender that was window-limited). Counted in packets of
//! SMSS as the kernel counts skbs. Recovery ends (the recovery point acknowledged)
//! with cwnd = ssthresh (`tcp_end_cwnd_reduction`). No parameters.
use super::sack::{enter, next_segment, pipe, should_enter};
use super::{LossRecovery, NextSeg};
use crate::tcp::cc::Cc;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct Prr {
    /// Packets delivered and sent since recovery began, and the window then.
    prr_delivered: u64,
    prr_out: u64,
    recover_fs: u64,
}

impl Prr {
    pub fn new(_: &TcpConfig) -> Prr {
        Prr::default()
    }

    /// `tcp_cwnd_reduction`: the window for this ACK (`una_advanced`: it moved
    /// `snd_una`; `queued`: bytes of a fast retransmission queued and not sent yet,
    /// which the pipe already counts).
    fn reduce(&mut self, tcb: &mut Tcb, now: Instant, una_advanced: bool, queued: u64) {
        let pipe = pipe(tcb) - queued;
        self.reduce_with(tcb, now, una_advanced, pipe);
    }

    /// Starts a reduction from the window now (`tcp_init_cwnd_reduction`).
    pub(super) fn start(&mut self, tcb: &Tcb) {
        *self = Prr { recover_fs: tcb.cwnd / tcb.smss, ..Prr::default() };
    }

    /// The window for this ACK with `pipe` bytes in flight.
    pub(super) fn reduce_with(&mut self, tcb: &mut Tcb, now: Instant, una_advanced: bool, pipe: u64) {
        let delivered = tcb.delivered.div_ceil(tcb.smss);
        self.reduce_by(tcb, now, una_advanced, pipe, delivered);
    }

    /// The same with this ACK's `delivered` packets given.
    pub(super) fn reduce_by(&mut self, tcb: &mut Tcb, now: Instant, una_advanced: bool, pipe: u64, delivered: u64) {
        let smss = tcb.smss;
        if delivered == 0 {
            return;
        }
        self.prr_delivered += delivered;
        let pipe = pipe.div_ceil(smss);
        let ssthresh = tcb.ssthresh / smss;
        let sndcnt = if pipe > ssthresh {
            (ssthresh * self.prr_delivered).div_ceil(self.recover_fs.max(1)).saturating_sub(self.prr_out)
        } else {
            let bound = self.prr_delivered.saturating_sub(self.prr_out).max(delivered) + una_advanced as u64;
            bound.min(ssthresh - pipe)
        };
        // The fast retransmission goes out whatever the window.
        let sndcnt = sndcnt.max(u64::from(self.prr_out == 0));
        tcb.set_cwnd(now, (pipe + sndcnt) * smss);
    }
}

impl Prr {
    /// Counts what recovery sends.
    pub(super) fn sent(&mut self, tcb: &Tcb, next: NextSeg) {
        if let NextSeg::Send(_, len) = next {
            self.prr_out += len.div_ceil(tcb.smss);
        }
    }
}

impl LossRecovery for Prr {
    fn on_dupack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        if should_enter(tcb) {
            // Inside an ECN reduction the counts go on (`tcp_enter_recovery`).
            if !tcb.in_cwr {
                self.start(tcb);
            }
            let len = enter(tcb, cc, now);
            self.reduce(tcb, now, false, len);
            // The fast retransmission goes out next, and counts as sent.
            self.prr_out = 1;
        } else if tcb.in_recovery {
            self.reduce(tcb, now, false, 0);
        }
    }

    fn on_recovery_ack(&mut self, tcb: &mut Tcb, now: Instant, _acked: u64) {
        if tcb.snd_una < tcb.recover {
            self.reduce(tcb, now, true, 0);
            return;
        }
        tcb.in_recovery = false;
        tcb.set_cwnd(now, tcb.ssthresh);
    }

    super::no_time_based_detection!();

    fn on_ece(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        self.start(tcb);
        let ssthresh = crate::tcp::cc::CongestionControl::ssthresh(cc, tcb);
        tcb.start_cwr(now, ssthresh);
    }

    fn on_cwr_ack(&mut self, tcb: &mut Tcb, now: Instant, advanced: bool) {
        self.reduce(tcb, now, advanced, 0);
    }

    fn next_segment(&mut self, tcb: &mut Tcb, data_end: u64) -> NextSeg {
        let next = next_segment(tcb, data_end);
        self.sent(tcb, next);
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sender in recovery with `flight` segments of 1000 bytes out, none SACKed
    /// or lost, ssthresh 10 segments, and this ACK delivering one.
    fn tcb(flight: u64) -> Tcb {
        let mut t = Tcb::new(1000, 20_000, None);
        (t.snd_una, t.snd_nxt, t.snd_max, t.high_rxt) = (1, 1 + flight * 1000, 1 + flight * 1000, 1);
        t.ssthresh = 10_000;
        t.in_recovery = true;
        t.delivered = 1000;
        t
    }

    /// Below ssthresh the slow-start reduction bound lets the sender catch up by at
    /// most the packets delivered plus one, and only on an ACK that advanced
    /// `snd_una` (RFC 6937bis: a duplicate ACK gets the conservative bound).
    #[test]
    fn reduction_bound_below_ssthresh() {
        for (una_advanced, cwnd) in [(true, 5), (false, 4)] {
            let mut t = tcb(3);
            let mut prr = Prr { prr_delivered: 4, prr_out: 4, recover_fs: 20 };
            prr.reduce(&mut t, Instant::ZERO, una_advanced, 0);
            // pipe 3, ssthresh − pipe = 7, prr_delivered − prr_out = 1.
            assert_eq!(t.cwnd, cwnd * 1000, "snd_una advanced: {una_advanced}");
        }
    }

    /// Above ssthresh the window follows ⌈ssthresh·prr_delivered / RecoverFS⌉.
    #[test]
    fn proportional_part_above_ssthresh() {
        let mut t = tcb(16);
        let mut prr = Prr { prr_delivered: 4, prr_out: 2, recover_fs: 20 };
        prr.reduce(&mut t, Instant::ZERO, true, 0);
        // ⌈10·5/20⌉ − 2 = 1 packet beyond the pipe of 16.
        assert_eq!(t.cwnd, 17_000);
    }
}
