//! Reno fast retransmit and fast recovery (RFC 5681 §3.2): on the third duplicate
//! ACK, ssthresh from the controller, retransmit `snd_una`, cwnd = ssthresh + 3·SMSS;
//! each further duplicate ACK inflates cwnd by one SMSS; the first new ACK ends
//! recovery with cwnd = ssthresh (deflation), whether or not it covers everything
//! sent before the loss (so several losses in a window mean several reductions, or
//! a timeout).
//!
//! No parameters.
use super::{LossRecovery, NextSeg, DUP_THRESH};
use crate::tcp::cc::Cc;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct Reno;

impl Reno {
    pub fn new(_: &TcpConfig) -> Reno {
        Reno
    }
}

/// Fast retransmit and the inflated window, shared with NewReno (RFC 6582 §3.2
/// steps 1–4, which differ only in when recovery may start).
pub(super) fn on_dupack(tcb: &mut Tcb, cc: &mut Cc, now: Instant, may_enter: bool) {
    if tcb.in_recovery {
        if tcb.dupacks > DUP_THRESH {
            tcb.set_cwnd(now, tcb.cwnd + tcb.smss);
        }
    } else if tcb.dupacks == DUP_THRESH && may_enter {
        let ssthresh = super::loss_ssthresh(tcb, cc);
        tcb.enter_recovery(now, ssthresh);
        tcb.set_cwnd(now, tcb.ssthresh + 3 * tcb.smss);
        tcb.rexmit = Some(tcb.snd_una);
    }
}

impl LossRecovery for Reno {
    fn on_dupack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        on_dupack(tcb, cc, now, true);
    }

    fn on_recovery_ack(&mut self, tcb: &mut Tcb, now: Instant, _acked: u64) {
        tcb.in_recovery = false;
        tcb.set_cwnd(now, tcb.ssthresh);
    }

    super::no_time_based_detection!();
    super::ecn_halves_at_once!();

    fn next_segment(&mut self, _tcb: &mut Tcb, _data_end: u64) -> NextSeg {
        NextSeg::Default
    }
}
