//! Loss recovery: when a loss is inferred from duplicate ACKs or SACKs, what is
//! resent and how the window behaves until the recovery point is acknowledged. One
//! trait, one file per algorithm, one registry line each (`tcp.recovery`); the
//! window's reduction comes from the congestion controller (`cc/`), as in ns-3's
//! `TcpRecoveryOps` and Linux, where `tcp_input.c` recovers and
//! `tcp_congestion_ops.ssthresh` says by how much.
//!
//! Algorithms: `tahoe` (fast retransmit, then slow start from one segment: Jacobson
//! 1988), `reno` (RFC 5681 §3.2 fast recovery), `newreno` (RFC 6582), `sack` (RFC
//! 6675 with RFC 2018), `prr` (RFC 6675's loss detection with RFC 6937's
//! proportional rate reduction, as Linux). What they share — retransmission timeouts, the duplicate-ACK
//! test, the scoreboard — is in the endpoint.
use super::cc::Cc;
use super::tcb::Tcb;
use super::TcpConfig;
use crate::time::Instant;

pub mod newreno;
pub mod prr;
pub mod rack;
pub mod reno;
pub mod sack;
pub mod tahoe;

/// What to send next during recovery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextSeg {
    /// The endpoint's usual choice (a pending retransmission, else new data within
    /// the window).
    Default,
    /// `len` bytes (at most) from this offset.
    Send(u64, u64),
    /// Nothing now.
    Wait,
}

/// The duplicate-ACK threshold (RFC 5681 §3.2, RFC 6675 `DupThresh`).
pub const DUP_THRESH: u32 = 3;

crate::registry! {
    /// A loss-recovery algorithm, chosen by [`RecoveryKind`] (`tcp.recovery`).
    trait LossRecovery(TcpConfig) for #[derive(Clone, Debug)] Recovery, RecoveryKind {
        "tahoe" => Tahoe(tahoe::Tahoe),
        "reno" => Reno(reno::Reno),
        "newreno" => NewReno(newreno::NewReno),
        "sack" => Sack(sack::Sack),
        "prr" => Prr(prr::Prr),
        "rack" => Rack(rack::Rack),
    }
    /// A duplicate ACK arrived (`tcb.dupacks` counts it; SACK blocks it carried are
    /// on the scoreboard): perhaps enter recovery, or inflate the window in it.
    fn on_dupack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant);
    /// During recovery, a cumulative ACK advanced `snd_una` by `acked` bytes: a
    /// partial ACK (stay) or the end of recovery (leave, setting the window).
    fn on_recovery_ack(&mut self, tcb: &mut Tcb, now: Instant, acked: u64);
    /// During recovery, what to send next (`data_end`: the offset after the last
    /// byte the application has given).
    fn next_segment(&mut self, tcb: &mut Tcb, data_end: u64) -> NextSeg;
    /// Every ACK that acknowledged or SACKed data, after the scoreboard and the sent
    /// segments (`tcb.sent`, `tcb.delivered_segs`) are updated and before
    /// `on_dupack` / `on_recovery_ack` (time-based loss detection: RACK).
    fn on_ack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant);
    /// A burst of segments has been sent (the end of Linux's `tcp_write_xmit`,
    /// where the loss probe is scheduled).
    fn on_sent(&mut self, tcb: &mut Tcb, now: Instant);
    /// `tcb.recovery_deadline` has come (RACK's reordering timer).
    fn on_timer(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant);
    /// An ACK with ECE outside any reduction (RFC 3168 §6.1.2, Linux
    /// `tcp_enter_cwr`): reduce once for this window (`Tcb::start_cwr`), resending
    /// nothing.
    fn on_ece(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant);
    /// An ACK during that reduction (`advanced`: it moved `snd_una`), before the
    /// reduction's end: the window for it (Linux `tcp_cwnd_reduction` in CWR).
    fn on_cwr_ack(&mut self, tcb: &mut Tcb, now: Instant, advanced: bool);
    /// A retransmission timeout: true if the algorithm marked what is lost and
    /// chooses what to resend until the loss episode ends (`next_segment`), false
    /// to let the endpoint resend everything from `snd_una`.
    fn on_rto(&mut self, tcb: &mut Tcb, now: Instant) -> bool;
    provided mut {
        /// Every ACK that advanced `snd_una`, after `on_recovery_ack` and the
        /// undo (Linux `tcp_fastretrans_alert`: step D ends a recovery, then step
        /// E looks for losses in the state that left).
        fn after_ack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
            let _ = (tcb, cc, now);
        }
        /// This ACK undid a timeout's loss episode (`advanced`: it moved
        /// `snd_una`); `after_ack` follows. Linux `tcp_fastretrans_alert`: back
        /// in the open state, the Loss case falls through to the open state's
        /// loss detection, which may start a recovery at once.
        fn on_loss_undone(&mut self, advanced: bool) {
            let _ = advanced;
        }
    }
}

/// The two hooks for algorithms that detect losses by duplicate ACKs alone.
macro_rules! no_time_based_detection {
    () => {
        fn on_ack(&mut self, _: &mut Tcb, _: &mut crate::tcp::cc::Cc, _: Instant) {}
        fn on_sent(&mut self, _: &mut Tcb, _: Instant) {}
        fn on_timer(&mut self, _: &mut Tcb, _: &mut crate::tcp::cc::Cc, _: Instant) {}
        fn on_rto(&mut self, _: &mut Tcb, _: Instant) -> bool {
            false
        }
    };
}
pub(crate) use no_time_based_detection;

/// RFC 3168 §6.1.2 as written, for the algorithms before PRR: cwnd and ssthresh
/// halved at once (the controller's threshold), the window held there until the
/// reduction ends.
macro_rules! ecn_halves_at_once {
    () => {
        fn on_ece(&mut self, tcb: &mut Tcb, cc: &mut crate::tcp::cc::Cc, now: Instant) {
            let ssthresh = crate::tcp::cc::CongestionControl::ssthresh(cc, tcb);
            tcb.start_cwr(now, ssthresh);
            tcb.set_cwnd(now, ssthresh);
        }
        fn on_cwr_ack(&mut self, _: &mut Tcb, _: Instant, _: bool) {}
    };
}
pub(crate) use ecn_halves_at_once;

/// The slow-start threshold for a loss found now: the controller's, unless an ECN
/// reduction of this window is under way, whose threshold stands (Linux
/// `tcp_enter_recovery` inside `TCP_CA_CWR`: one reduction per window).
pub(super) fn loss_ssthresh(tcb: &Tcb, cc: &mut Cc) -> u64 {
    if tcb.in_cwr {
        tcb.ssthresh
    } else {
        use super::cc::CongestionControl;
        cc.ssthresh(tcb)
    }
}

impl RecoveryKind {
    /// Whether the algorithm reads SACK blocks (without a profile, SACK is offered
    /// when it does).
    pub fn uses_sack(self) -> bool {
        matches!(self, RecoveryKind::Sack | RecoveryKind::Prr | RecoveryKind::Rack)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::CcKind;

    /// The registry's lists agree: every kind's name parses back to it, makes an
    /// algorithm of that kind, and is listed once; unknown names are refused.
    #[test]
    fn registries_name_parse_and_make_every_algorithm() {
        let cfg = TcpConfig::default();
        for &k in RecoveryKind::ALL {
            assert_eq!(RecoveryKind::parse(k.name()), Some(k));
            assert_eq!(k.make(&cfg).kind(), k);
        }
        for &k in CcKind::ALL {
            assert_eq!(CcKind::parse(k.name()), Some(k));
            assert_eq!(k.make(&cfg).kind(), k);
        }
        assert_eq!(RecoveryKind::NAMES, ["tahoe", "reno", "newreno", "sack", "prr", "rack"]);
        assert_eq!(RecoveryKind::ALL.len(), RecoveryKind::NAMES.len());
        assert_eq!(RecoveryKind::parse("fack"), None);
        assert_eq!(RecoveryKind::choices(), "\"tahoe\", \"reno\", \"newreno\", \"sack\", \"prr\" or \"rack\"");
    }
}
