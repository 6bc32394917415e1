//! Tahoe (Jacobson 1988; 4.3BSD-Tahoe): on the third duplicate ACK, retransmit from
//! `snd_una` and slow-start from one segment, go-back-N: cwnd = 1 SMSS, ssthresh from
//! the controller, `snd_nxt` back to `snd_una`. No fast recovery, so the endpoint is
//! never "in recovery"; a second fast retransmit waits until `snd_una` passes the
//! point of the first (`recover`, as RFC 6582 §4.1 does for NewReno).
//!
//! No parameters.
use super::{LossRecovery, NextSeg, DUP_THRESH};
use crate::tcp::cc::Cc;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct Tahoe;

impl Tahoe {
    pub fn new(_: &TcpConfig) -> Tahoe {
        Tahoe
    }
}

impl LossRecovery for Tahoe {
    fn on_dupack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        if tcb.dupacks == DUP_THRESH && tcb.snd_una >= tcb.recover {
            tcb.count_fast_retransmit(now);
            let ssthresh = super::loss_ssthresh(tcb, cc);
            tcb.set_ssthresh(now, ssthresh);
            tcb.set_cwnd(now, tcb.smss);
            (tcb.in_cwr, tcb.queue_cwr) = (false, true);
            tcb.recover = tcb.snd_max;
            tcb.snd_nxt = tcb.snd_una;
            tcb.timing = None;
        }
    }

    fn on_recovery_ack(&mut self, tcb: &mut Tcb, now: Instant, _acked: u64) {
        // Never in recovery; for completeness, leave it as Reno does.
        tcb.in_recovery = false;
        tcb.set_cwnd(now, tcb.ssthresh);
    }

    super::no_time_based_detection!();
    super::ecn_halves_at_once!();

    fn next_segment(&mut self, _tcb: &mut Tcb, _data_end: u64) -> NextSeg {
        NextSeg::Default
    }
}
