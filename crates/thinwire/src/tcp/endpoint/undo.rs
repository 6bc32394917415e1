//! Undoing a needless window reduction, and F-RTO: the endpoint's part of loss
//! recovery that looks back at an episode (with `rto = "linux"`, Linux 6.x's
//! `net/ipv4/tcp_input.c`).
//!
//! - Eifel detection (RFC 3522; `tcp_packet_delayed`): with timestamps, an ACK
//!   echoing a timestamp older than the episode's first retransmission was sent
//!   for an original transmission.
//! - DSACK undo (RFC 2883 §4, RFC 3708; `tcp_check_dsack`, `tcp_try_undo_dsack`):
//!   each duplicate the receiver reports among the episode's retransmissions is
//!   one retransmission fewer that was needed; none left — the episode was
//!   needless.
//! - The undo itself (`tcp_undo_cwnd_reduction`, `tcp_try_undo_recovery`,
//!   `tcp_try_undo_loss`): cwnd from the controller (`undo_cwnd`), ssthresh at
//!   least what it was, the episode ended; a timeout's also unmarks what it deemed
//!   lost.
//! - F-RTO (RFC 5682 §3.1, SACK-enhanced, as `tcp_process_loss`): after a timeout,
//!   the first ACK that advances lets out new data instead of retransmissions; data
//!   never retransmitted (S)ACKed after that shows the timeout spurious (undo), a
//!   SACK or duplicate ACK shows the loss real.
//!
//! Parameters (`TcpConfig`): `frto` (default false; true in the `linux` profile),
//! `dsack` (the receiver's reports, default false; `linux` true), `timestamps`;
//! undo is on with `rto = "linux"`.
use super::{unwrap_seq, Tcp, TcpVar};
use crate::tcp::cc::CongestionControl;
use crate::tcp::recovery::LossRecovery;
use crate::time::Instant;
use crate::wire::TcpRepr;

impl Tcp {
    /// Linux `tcp_packet_delayed`, RFC 3522 Eifel detection: the ACK echoes a
    /// timestamp older than the loss episode's first retransmission, so it was
    /// sent for an original transmission.
    fn packet_delayed(&self, seg: &TcpRepr) -> bool {
        match (self.tcb.undo.and_then(|u| u.stamp), seg.opts.timestamps) {
            (Some(sent), Some((_, ecr))) if self.ts_ok && ecr != 0 => (ecr.wrapping_sub(sent) as i32) < 0,
            _ => false,
        }
    }

    /// Linux `tcp_may_undo`: every retransmission of the episode was DSACKed, or
    /// an original transmission arrived (timestamps).
    pub(super) fn may_undo(&self, seg: &TcpRepr) -> bool {
        self.tcb.undo.is_some_and(|u| u.retrans == Some(0)) || self.packet_delayed(seg)
    }

    /// Linux `tcp_undo_cwnd_reduction`: the episode's reduction was needless —
    /// cwnd and ssthresh back (at least what they were) and the episode ends. A
    /// timeout's (spurious) also unmarks what it deemed lost and stops resending
    /// from `snd_una` (`tcp_try_undo_loss`).
    pub(super) fn undo(&mut self, now: Instant) {
        let Some(u) = self.tcb.undo.take() else { return };
        let w = self.cc.undo_cwnd(&self.tcb, u.cwnd);
        let t = &mut self.tcb;
        t.set_cwnd(now, w);
        t.set_ssthresh(now, t.ssthresh.max(u.ssthresh));
        t.stats.undos += 1;
        t.push_var(now, TcpVar::Undo, t.stats.undos as i64);
        t.stats.spurious_timeouts += u.timeouts;
        t.recover = t.snd_una;
        t.in_recovery = false;
        if t.in_loss {
            for r in t.sent.iter_mut() {
                // A retransmission still out stays counted (`tcp_undo_cwnd_reduction`
                // clears `TCPCB_LOST` only, not `TCPCB_SACKED_RETRANS`).
                if r.marked && !r.lost {
                    (r.extra, t.maybe_extra) = (true, true);
                }
                (r.lost, r.marked) = (false, false);
            }
            t.snd_nxt = t.snd_max;
            (t.in_loss, t.frto) = (false, false);
            self.loss_by_recovery = false;
            // A FIN sent before the timeout is out again.
            self.fin_sent |= self.tcb.snd_max > self.data_end();
        }
    }

    /// An ACK during a timeout's loss episode (Linux `tcp_process_loss`):
    /// `advanced` — it moved `snd_una`; `sacked_or_dup` — it SACKed new data or
    /// was a duplicate. Undo if the timeout shows spurious (`tcp_try_undo_loss`);
    /// with F-RTO (RFC 5682 §3.1, SACK-enhanced, as the kernel): step 3.b, data
    /// never retransmitted is (S)ACKed — spurious, undo; step 2.b, the first ACK
    /// that advances without ending the episode lets out new data instead of
    /// retransmissions, if there is some the receiver's window allows (else F-RTO
    /// gives up); step 3.a, a SACK or duplicate ACK after that new data — the loss
    /// was real, recovery goes on as usual.
    pub(super) fn process_loss(&mut self, now: Instant, seg: &TcpRepr, advanced: bool, sacked_or_dup: bool) {
        let high = self.tcb.recover;
        if (advanced && self.may_undo(seg))
            || (self.tcb.frto && self.tcb.delivered_segs.iter().any(|&(_, end, retx)| !retx && end <= high))
        {
            self.undo(now);
            self.recovery.on_loss_undone(advanced);
            return;
        }
        if !self.tcb.frto {
            return;
        }
        let end = self.data_end();
        let t = &mut self.tcb;
        if t.snd_max > high {
            t.frto &= !sacked_or_dup;
        } else if advanced && t.snd_una < high {
            t.recover = t.snd_max;
            t.frto_new = t.snd_max < end && t.snd_una + t.snd_wnd > t.snd_max;
            t.frto = t.frto_new;
        }
    }

    /// Linux `tcp_try_undo_dsack`: outside a timeout's episode, once DSACKs have
    /// shown every retransmission of the last episode needless, it is undone.
    pub(super) fn try_undo_dsack(&mut self, now: Instant) {
        if !self.tcb.in_loss && self.tcb.undo.is_some_and(|u| u.retrans == Some(0)) {
            self.undo(now);
        }
    }

    /// RFC 2883 §4 (Linux `tcp_check_dsack`): the first SACK block reports a
    /// duplicate when it lies below the cumulative ACK or inside the second block.
    /// Each duplicate segment of the last episode's retransmissions is one
    /// retransmission fewer that was needed (`undo_retrans`).
    pub(super) fn check_dsack(&mut self, blocks: &[(u32, u32)], ack: u64) -> bool {
        let Some(&(l0, r0)) = blocks.first() else { return false };
        let un = |x| unwrap_seq(self.tcb.snd_una, self.iss, x);
        let (l0, r0) = (un(l0), un(r0));
        let inside = |&(l1, r1): &(u32, u32)| l0 >= un(l1) && r0 <= un(r1);
        if r0 <= l0 || !(l0 < ack || blocks.get(1).is_some_and(inside)) {
            return false;
        }
        self.tcb.stats.dsacks_received += 1;
        // One of a loss probe's duplicate (one segment ending where the probe
        // did) says nothing of reordering (`tcp_dsack_seen`: `FLAG_DSACK_TLP`).
        self.tcb.dsack_tlp = r0 - l0 <= self.tcb.smss && self.tcb.tlp.is_some_and(|(high, _)| high == r0);
        let segs = (r0 - l0).div_ceil(self.tcb.smss);
        if let Some(u) = &mut self.tcb.undo {
            if r0 > u.marker {
                u.retrans = u.retrans.map(|n| n.saturating_sub(segs));
            }
        }
        true
    }
}
