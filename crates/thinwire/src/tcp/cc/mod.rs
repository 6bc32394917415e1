//! Congestion control: how the window grows on ACKs and what the slow-start
//! threshold becomes after a loss. One trait, one file per algorithm, one registry
//! line each (`tcp.cc` in a scenario). The split from loss recovery (`recovery/`)
//! follows ns-3's `TcpCongestionOps` / `TcpRecoveryOps` and Linux's
//! `tcp_congestion_ops` (`net/ipv4/tcp_cong.c`): the controller says how much, the
//! recovery says what is lost and what to resend.
//!
//! Controllers: `rfc5681` (RFC 5681 as the seeds' stacks grow the window: slow
//! start adds min(acked, SMSS) per ACK, congestion avoidance SMSS·SMSS/cwnd per
//! ACK; ssthresh = max(FlightSize/2, 2·SMSS) after a loss; the controller of every
//! `tcp.variant`); `reno` (Linux 6.x's `tcp_cong.c`: packets counted, growth only
//! while window-limited, ssthresh half the window); `cubic` (RFC 9438 as Linux
//! 6.x's `tcp_cubic.c`, in packets); `bbr` (BBR v1 as `tcp_bbr.c`, with pacing
//! and delivery-rate samples, `tcp/rate.rs`); `clamp` (seed 003 §V's fixed
//! window, `tcp.cwnd_clamp` bytes, never reduced).
use super::tcb::Tcb;
use super::TcpConfig;
use crate::time::{Duration, Instant};

pub mod bbr;
pub mod clamp;
pub mod cubic;
pub mod reno;
pub mod rfc5681;

crate::registry! {
    /// A congestion controller, chosen by [`CcKind`] (`tcp.cc`).
    trait CongestionControl(TcpConfig) for #[derive(Clone, Debug)] Cc, CcKind {
        "rfc5681" => Rfc5681(rfc5681::Rfc5681),
        "reno" => Reno(reno::Reno),
        "cubic" => Cubic(cubic::Cubic),
        "bbr" => Bbr(bbr::Bbr),
        "clamp" => Clamp(clamp::Clamp),
    }
    /// The slow-start threshold after a loss is detected (entering fast recovery,
    /// or at a retransmission timeout): Linux `ssthresh`, ns-3 `GetSsThresh`.
    fn ssthresh(&mut self, tcb: &Tcb) -> u64;
    /// A new cumulative ACK outside loss recovery acknowledged `acked` bytes: grow
    /// the window (Linux `cong_avoid`, ns-3 `IncreaseWindow`).
    fn on_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64);
    /// An RTT sample was taken from an ACK (before `on_ack` for that ACK; Linux
    /// `pkts_acked`).
    fn on_rtt(&mut self, tcb: &mut Tcb, now: Instant, rtt: Duration);
    /// A retransmission timeout, after `ssthresh` and the window's reset (Linux
    /// `set_state(TCP_CA_Loss)`).
    fn on_rto(&mut self, tcb: &mut Tcb);
    /// The connection is established (Linux `init`).
    fn init(&mut self, tcb: &mut Tcb, now: Instant);
    /// After every ACK, once loss recovery has run, with the ACK's delivery-rate
    /// sample (`tcb.rate`): a controller that sets the window itself on every ACK
    /// (Linux `cong_control`: BBR) does so here and returns true.
    fn cong_control(&mut self, tcb: &mut Tcb, now: Instant) -> bool;
    /// A needless reduction is undone (Linux `undo_cwnd`): the window to restore,
    /// `prior` the one before the episode.
    fn undo_cwnd(&mut self, tcb: &Tcb, prior: u64) -> u64;
    provided mut {
        /// A data segment (new or sent again) goes out with nothing in flight
        /// (Linux `CA_EVENT_TX_START`, raised by `tcp_event_data_sent` before it
        /// sets `lsndtime`); `last_sent` is when the previous data segment went
        /// out. Default: nothing (CUBIC shifts its epoch; BBR, when the
        /// application had run dry, paces at its estimate and stays out of
        /// PROBE_RTT until data is delivered).
        fn on_tx_start(&mut self, tcb: &mut Tcb, now: Instant, last_sent: Instant) {
            let _ = (tcb, now, last_sent);
        }
    }
    provided ref {
        /// Whether `on_tx_start` would change anything now: the endpoint then
        /// works out whether anything is in flight (in a recovery, a walk over
        /// the sent segments). Default: never.
        fn wants_tx_start(&self) -> bool {
            false
        }
    }
}

/// The hooks a controller driven by `on_ack` leaves as they are.
macro_rules! window_by_acks {
    () => {
        fn init(&mut self, _: &mut Tcb, _: Instant) {}
        fn cong_control(&mut self, _: &mut Tcb, _: Instant) -> bool {
            false
        }
        fn undo_cwnd(&mut self, tcb: &Tcb, prior: u64) -> u64 {
            tcb.cwnd.max(prior)
        }
    };
}
pub(crate) use window_by_acks;

/// The start of Linux's `cong_avoid` for a controller that counts packets: None
/// when the window may not grow (`tcp_is_cwnd_limited`); otherwise the window in
/// packets after slow start (`tcp_slow_start`, up to ssthresh) and the packets
/// acknowledged (⌈bytes / SMSS⌉) left over for congestion avoidance.
pub(super) fn linux_slow_start(tcb: &Tcb, acked: u64) -> Option<(u64, u64)> {
    if !tcb.is_cwnd_limited() {
        return None;
    }
    let mut cwnd = tcb.cwnd / tcb.smss;
    let mut acked = acked.div_ceil(tcb.smss);
    let ssthresh = tcb.ssthresh / tcb.smss;
    if cwnd < ssthresh {
        acked = slow_start(&mut cwnd, ssthresh, acked);
    }
    Some((cwnd, acked))
}

/// Linux `tcp_slow_start`: the window (packets) grows by the packets acknowledged,
/// up to ssthresh; returns the packets left over for congestion avoidance.
fn slow_start(cwnd: &mut u64, ssthresh: u64, acked: u64) -> u64 {
    let grown = (*cwnd + acked).min(ssthresh).max(*cwnd);
    let left = acked - (grown - *cwnd);
    *cwnd = grown;
    left
}

/// Linux `tcp_cong_avoid_ai`: one packet more per `w` packets acknowledged
/// (`cnt` carries the count between ACKs; credit earned at a larger `w` is applied
/// gently).
pub(super) fn cong_avoid_ai(cwnd: &mut u64, cnt: &mut u64, w: u64, acked: u64) {
    let w = w.max(1);
    if *cnt >= w {
        *cnt = 0;
        *cwnd += 1;
    }
    *cnt += acked;
    if *cnt >= w {
        let d = *cnt / w;
        *cnt -= d * w;
        *cwnd += d;
    }
}
