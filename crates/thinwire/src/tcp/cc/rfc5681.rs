//! Reno congestion control as RFC 5681 §3.1 writes it and the seeds' stacks (4.4BSD,
//! Linux 2.4) grow the window, per ACK, without appropriate byte counting (`rfc5681`;
//! the controller of every `tcp.variant`):
//! - slow start (cwnd < ssthresh): cwnd += min(acked, SMSS) per ACK;
//! - congestion avoidance: cwnd += max(1, SMSS·SMSS / cwnd) per ACK;
//! - after a loss: ssthresh = max(FlightSize / 2, 2·SMSS) (RFC 5681 eq. (4)).
//!
//! No parameters. Linux's Reno (`reno`) counts packets instead: `reno.rs`.
use super::CongestionControl;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::{Duration, Instant};

#[derive(Clone, Debug, Default)]
pub struct Rfc5681;

impl Rfc5681 {
    pub fn new(_: &TcpConfig) -> Rfc5681 {
        Rfc5681
    }
}

impl CongestionControl for Rfc5681 {
    fn ssthresh(&mut self, tcb: &Tcb) -> u64 {
        (tcb.flight() / 2).max(2 * tcb.smss)
    }

    fn on_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64) {
        let inc = if tcb.cwnd < tcb.ssthresh { acked.min(tcb.smss) } else { (tcb.smss * tcb.smss / tcb.cwnd).max(1) };
        tcb.set_cwnd(now, tcb.cwnd + inc);
    }

    fn on_rtt(&mut self, _tcb: &mut Tcb, _now: Instant, _rtt: Duration) {}

    super::window_by_acks!();

    fn on_rto(&mut self, _tcb: &mut Tcb) {}
}
