//! Reno congestion control as the seeds' stacks (4.4BSD, Linux 2.4) grow the window,
//! RFC 5681 §3.1 without appropriate byte counting:
//! - slow start (cwnd < ssthresh): cwnd += min(acked, SMSS) per ACK;
//! - congestion avoidance: cwnd += max(1, SMSS·SMSS / cwnd) per ACK;
//! - after a loss: ssthresh = max(FlightSize / 2, 2·SMSS) (RFC 5681 eq. (4)).
//!
//! No parameters.
use super::CongestionControl;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::{Duration, Instant};

#[derive(Clone, Debug, Default)]
pub struct Reno;

impl Reno {
    pub fn new(_: &TcpConfig) -> Reno {
        Reno
    }
}

impl CongestionControl for Reno {
    fn ssthresh(&mut self, tcb: &Tcb) -> u64 {
        (tcb.flight() / 2).max(2 * tcb.smss)
    }

    fn on_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64) {
        let inc = if tcb.cwnd < tcb.ssthresh { acked.min(tcb.smss) } else { (tcb.smss * tcb.smss / tcb.cwnd).max(1) };
        tcb.set_cwnd(now, tcb.cwnd + inc);
    }

    fn on_rtt(&mut self, _tcb: &Tcb, _now: Instant, _rtt: Duration) {}

    fn on_rto(&mut self, _tcb: &Tcb) {}
}
