//! NewReno (RFC 6582): Reno's fast retransmit and inflation, but recovery lasts until
//! everything sent before it began (`recover`) is acknowledged. A partial ACK
//! retransmits the next unacknowledged segment and deflates cwnd by the amount
//! acknowledged, adding back one SMSS if at least one SMSS was acknowledged (§3.2
//! step 5); the full ACK ends recovery with cwnd = min(ssthresh, FlightSize + SMSS)
//! (step 6, option 2, with FlightSize at least one SMSS). A new recovery may start
//! only once `snd_una` has passed `recover` (§4.1, no false fast retransmits after a
//! timeout).
//!
//! No parameters.
use super::{LossRecovery, NextSeg};
use crate::tcp::cc::Cc;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct NewReno;

impl NewReno {
    pub fn new(_: &TcpConfig) -> NewReno {
        NewReno
    }
}

impl LossRecovery for NewReno {
    fn on_dupack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        let may_enter = tcb.snd_una >= tcb.recover;
        super::reno::on_dupack(tcb, cc, now, may_enter);
    }

    fn on_recovery_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64) {
        if tcb.snd_una < tcb.recover {
            // Partial ACK (step 5): retransmit, deflate, stay.
            tcb.rexmit = Some(tcb.snd_una);
            let c = tcb.cwnd.saturating_sub(acked) + if acked >= tcb.smss { tcb.smss } else { 0 };
            tcb.set_cwnd(now, c.max(tcb.smss));
            return;
        }
        tcb.in_recovery = false;
        let c = tcb.ssthresh.min(tcb.flight().max(tcb.smss) + tcb.smss);
        tcb.set_cwnd(now, c);
    }

    super::no_time_based_detection!();
    super::ecn_halves_at_once!();

    fn next_segment(&mut self, _tcb: &mut Tcb, _data_end: u64) -> NextSeg {
        NextSeg::Default
    }
}
