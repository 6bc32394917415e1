//! Congestion control: how the window grows on ACKs and what the slow-start
//! threshold becomes after a loss. One trait, one file per algorithm, one registry
//! line each (`tcp.cc` in a scenario). The split from loss recovery (`recovery/`)
//! follows ns-3's `TcpCongestionOps` / `TcpRecoveryOps` and Linux's
//! `tcp_congestion_ops` (`net/ipv4/tcp_cong.c`): the controller says how much, the
//! recovery says what is lost and what to resend.
//!
//! Controllers: `reno` (RFC 5681 as the seeds' stacks grow the window: slow start
//! adds min(acked, SMSS) per ACK, congestion avoidance SMSS·SMSS/cwnd per ACK;
//! ssthresh = max(FlightSize/2, 2·SMSS) after a loss); `cubic` (RFC 9438 as Linux
//! 6.x's `tcp_cubic.c`, in packets).
use super::tcb::Tcb;
use super::TcpConfig;
use crate::time::{Duration, Instant};

pub mod cubic;
pub mod reno;

crate::registry! {
    /// A congestion controller, chosen by [`CcKind`] (`tcp.cc`).
    trait CongestionControl(TcpConfig) for Cc, CcKind {
        "reno" => Reno(reno::Reno),
        "cubic" => Cubic(cubic::Cubic),
    }
    /// The slow-start threshold after a loss is detected (entering fast recovery,
    /// or at a retransmission timeout): Linux `ssthresh`, ns-3 `GetSsThresh`.
    fn ssthresh(&mut self, tcb: &Tcb) -> u64;
    /// A new cumulative ACK outside loss recovery acknowledged `acked` bytes: grow
    /// the window (Linux `cong_avoid`, ns-3 `IncreaseWindow`).
    fn on_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64);
    /// An RTT sample was taken from an ACK (before `on_ack` for that ACK; Linux
    /// `pkts_acked`).
    fn on_rtt(&mut self, tcb: &Tcb, now: Instant, rtt: Duration);
    /// A retransmission timeout (after `ssthresh`; Linux `set_state(TCP_CA_Loss)`).
    fn on_rto(&mut self, tcb: &Tcb);
}
