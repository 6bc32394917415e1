//! SACK-based loss recovery (RFC 6675, with RFC 2018 blocks): recovery starts at
//! `DupThresh` duplicate ACKs or as soon as the scoreboard shows more than
//! (DupThresh − 1)·SMSS SACKed above a hole (`IsLost`), if `snd_una` has passed the
//! last recovery point. Entering: ssthresh from the controller, cwnd = ssthresh, the
//! first presumed-lost segment resent at once whatever the pipe, HighRxt at its end
//! (§5 step 4.3). While in recovery a segment goes out while cwnd − pipe ≥ SMSS
//! (§5 step 5), chosen by NextSeg: rule 1, the lowest unSACKed presumed-lost offset
//! above HighRxt; rule 2, new data within the receiver's window. Rules 3 and 4
//! (unSACKed data not yet deemed lost; the rescue retransmission) are not
//! implemented. A partial ACK keeps recovery; the ACK covering the recovery point
//! ends it with cwnd = ssthresh.
//!
//! No parameters (DupThresh 3).
use super::{LossRecovery, NextSeg, DUP_THRESH};
use crate::tcp::cc::Cc;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::Instant;

#[derive(Clone, Debug, Default)]
pub struct Sack;

impl Sack {
    pub fn new(_: &TcpConfig) -> Sack {
        Sack
    }
}

/// The lowest offset not deemed lost: below it, every unSACKed byte has more than
/// (DupThresh − 1)·SMSS SACKed above it (RFC 6675 `IsLost`); 0 if none is lost.
pub(super) fn lost_bound(tcb: &Tcb) -> u64 {
    let thresh = (DUP_THRESH as u64 - 1) * tcb.smss;
    let mut acc = 0u64;
    for &(s, e) in tcb.scoreboard.v.iter().rev() {
        if acc + (e - s) > thresh {
            return e - (thresh - acc);
        }
        acc += e - s;
    }
    0
}

/// RFC 6675 `pipe`: bytes in flight — unSACKed bytes not deemed lost, plus those
/// retransmitted (below HighRxt).
pub(super) fn pipe(tcb: &Tcb) -> u64 {
    let lost = lost_bound(tcb);
    let mut pipe = 0;
    let mut a = tcb.snd_una;
    let mut holes: Vec<(u64, u64)> = Vec::new();
    for &(s, e) in &tcb.scoreboard.v {
        if s > a {
            holes.push((a, s.min(tcb.snd_max)));
        }
        a = a.max(e);
    }
    if a < tcb.snd_max {
        holes.push((a, tcb.snd_max));
    }
    for (s, e) in holes {
        let not_lost_from = s.max(lost).min(e);
        pipe += e - not_lost_from;
        let rx_to = tcb.high_rxt.min(e);
        if rx_to > s {
            pipe += rx_to - s;
        }
    }
    pipe
}

/// RFC 6675 §5: the trigger — `DupThresh` duplicate ACKs or a loss on the
/// scoreboard, once `snd_una` has passed the last recovery point.
pub(super) fn should_enter(tcb: &Tcb) -> bool {
    !tcb.in_recovery && (tcb.dupacks >= DUP_THRESH || lost_bound(tcb) > tcb.snd_una) && tcb.snd_una >= tcb.recover
}

/// Enters recovery with the controller's ssthresh and queues the first
/// presumed-lost segment at once, whatever the pipe (§5 step 4.3), HighRxt at its
/// end; returns its length.
pub(super) fn enter(tcb: &mut Tcb, cc: &mut Cc, now: Instant) -> u64 {
    let ssthresh = super::loss_ssthresh(tcb, cc);
    tcb.enter_recovery(now, ssthresh);
    let hole_end = tcb.hole_end(tcb.snd_una, tcb.snd_max);
    let len = tcb.smss.min(hole_end - tcb.snd_una);
    tcb.high_rxt = tcb.snd_una + len;
    tcb.rexmit = Some(tcb.snd_una);
    len
}

/// NextSeg (§4) while the window allows a segment more than the pipe.
pub(super) fn next_segment(tcb: &mut Tcb, data_end: u64) -> NextSeg {
    if tcb.cwnd < pipe(tcb) + tcb.smss {
        return NextSeg::Wait;
    }
    let lost = lost_bound(tcb);
    // Rule 1: lowest unSACKed, lost sequence number above HighRxt.
    let mut s = tcb.high_rxt.max(tcb.snd_una);
    while let Some(e) = tcb.scoreboard.end_of(s) {
        s = e;
    }
    if s < lost && s < tcb.snd_max {
        let len = (tcb.hole_end(s, tcb.snd_max) - s).min(tcb.smss);
        tcb.high_rxt = s + len;
        return NextSeg::Send(s, len);
    }
    new_data(tcb, data_end)
}

/// NextSeg rule 2: new data within the receiver's window.
pub(super) fn new_data(tcb: &mut Tcb, data_end: u64) -> NextSeg {
    if tcb.snd_max < data_end && tcb.snd_max + tcb.smss.min(data_end - tcb.snd_max) <= tcb.snd_una + tcb.snd_wnd {
        tcb.snd_nxt = tcb.snd_max;
        return NextSeg::Send(tcb.snd_max, tcb.smss);
    }
    NextSeg::Wait
}

impl LossRecovery for Sack {
    fn on_dupack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        if should_enter(tcb) {
            enter(tcb, cc, now);
            tcb.set_cwnd(now, tcb.ssthresh);
        }
    }

    fn on_recovery_ack(&mut self, tcb: &mut Tcb, now: Instant, _acked: u64) {
        if tcb.snd_una < tcb.recover {
            return; // partial ACK: the scoreboard drives what is resent
        }
        tcb.in_recovery = false;
        tcb.set_cwnd(now, tcb.ssthresh);
    }

    super::no_time_based_detection!();
    super::ecn_halves_at_once!();

    fn next_segment(&mut self, tcb: &mut Tcb, data_end: u64) -> NextSeg {
        next_segment(tcb, data_end)
    }
}
