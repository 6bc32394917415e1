//! The sender's half of the transmission control block (RFC 9293 §3.3.1): what
//! congestion control (`cc/`) and loss recovery (`recovery/`) read and change —
//! the sequence variables, the congestion window and threshold, the SACK
//! scoreboard, the recovery point — with the counters and the trace of variables
//! they move. The shape of ns-3's `TcpSocketState` and of the parts of Linux's
//! `tcp_sock` that `tcp_congestion_ops` sees.
//!
//! Sequence numbers are 64-bit offsets from the initial sequence number (offset 0 is
//! the SYN).
use super::endpoint::{TcpStats, TcpVar, VarEvent};
use super::ranges::Ranges;
use crate::time::{Duration, Instant};
use std::collections::VecDeque;

/// A data segment sent and not yet cumulatively acknowledged (Linux's skb on the
/// retransmission queue), kept when the sender times segments (`rto = "linux"`)
/// or RACK needs their send times.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// When it was last sent.
    pub(crate) xmit: Instant,
    /// Ever sent again (Karn: no RTT sample from it).
    pub(crate) retx: bool,
    /// Deemed lost and not sent again since (not in the pipe).
    pub(crate) lost: bool,
    /// Deemed lost, sent again or not (Linux's `TCPCB_LOST`, kept on a
    /// retransmission until the segment is acknowledged or SACKed).
    pub(crate) marked: bool,
    /// Covered by SACK blocks.
    pub(crate) sacked: bool,
    /// Sent again while not deemed lost, that transmission still out (Linux's
    /// `TCPCB_SACKED_RETRANS` without `TCPCB_LOST`: a retransmission whose loss
    /// an undo took back; not a loss probe's, which Linux sends with
    /// `__tcp_retransmit_skb`, setting neither the bit nor `retrans_out`). The kernel counts such a
    /// segment twice in flight (`tcp_packets_in_flight`: `packets_out −
    /// left_out + retrans_out`) and, while `retrans_out ≥ lost_out`, resends
    /// nothing (`tcp_xmit_retransmit_queue`).
    pub(crate) extra: bool,
    /// Off Linux's time-sorted list (`tsorted_sent_queue`) until sent again:
    /// RACK marked it lost while `extra` (`tcp_rack_detect_loss` takes every
    /// segment it marks off the list; this one keeps its transmission counted,
    /// so RACK never judges it again and the timer resends it).
    pub(crate) unlisted: bool,
    /// The connection's delivery state when it was last sent (rate sampling).
    pub(crate) tx: super::rate::TxState,
}

/// What undoing a loss episode's reduction needs (Linux `tcp_init_undo`:
/// `prior_cwnd`, `prior_ssthresh`, `retrans_stamp`, `undo_retrans`,
/// `undo_marker`), kept from the episode's start until the next episode or an
/// undo, so that DSACKs arriving after the episode can still undo it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Undo {
    /// The window and threshold before the episode (`tcp_current_ssthresh`).
    pub(crate) cwnd: u64,
    pub(crate) ssthresh: u64,
    /// Our timestamp clock when the episode's first retransmission left; None
    /// once the episode is over (Linux clears `retrans_stamp` back in Open).
    pub(crate) stamp: Option<u32>,
    /// Segments retransmitted in the episode and not yet DSACKed; None before
    /// the first (Linux's −1).
    pub(crate) retrans: Option<u64>,
    /// `snd_una` when the episode began.
    pub(crate) marker: u64,
    /// Retransmission timeouts in the episode (spurious ones, if it is undone).
    pub(crate) timeouts: u64,
}

/// Our timestamp clock (RFC 7323 TSval): milliseconds, never 0.
pub fn ts_clock(now: Instant) -> u32 {
    (now.nanos() / 1_000_000) as u32 + 1
}

/// The timestamp clock's phase for a connection (see `Tcb::ts_phase`): a time
/// in [0, 1 ms) from its two ISNs, mixed otherwise than the jiffies' phase
/// (`wheel::phase_from`): a kernel's jiffies and its millisecond clock keep no
/// fixed phase to each other.
pub(crate) fn ts_phase_from(iss_a: u32, iss_b: u32) -> Duration {
    let x = ((iss_b as u64) << 32 | iss_a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    Duration(((x >> 32) % 1_000_000) as i64)
}

#[derive(Clone, Debug)]
pub struct Tcb {
    /// Sender maximum segment size in bytes (after options).
    pub(crate) smss: u64,
    pub(crate) cwnd: u64,
    pub(crate) ssthresh: u64,
    /// Oldest unacknowledged offset.
    pub(crate) snd_una: u64,
    /// Next offset to send.
    pub(crate) snd_nxt: u64,
    /// Highest offset sent + 1.
    pub(crate) snd_max: u64,
    /// The peer's receive window (scaled), in bytes.
    pub(crate) snd_wnd: u64,
    /// Duplicate ACKs in a row.
    pub(crate) dupacks: u32,
    pub(crate) in_recovery: bool,
    /// A timeout's loss episode is under way (Linux `TCP_CA_Loss`) until `recover`
    /// is acknowledged.
    pub(crate) in_loss: bool,
    /// The smoothed RTT (the endpoint's estimator), and whether the peer does SACK.
    pub(crate) srtt: Option<Duration>,
    /// The smallest RTT sample, the handshake's included (Linux `tcp_min_rtt`,
    /// whose 5-minute window is longer than the runs here).
    pub(crate) min_rtt: Option<Duration>,
    pub(crate) sack_ok: bool,
    /// A tail loss probe is wanted now (the recovery asks, the endpoint sends it:
    /// new data if there is some the receiver's window allows, else the last
    /// segment again).
    pub(crate) probe: bool,
    /// The probe timer fired while a probe was still outstanding (Linux
    /// `tcp_send_loss_probe`: at most one, `rearm_timer`): no probe; the endpoint
    /// re-arms the retransmission timer from the first unacknowledged segment's
    /// transmission (`tcp_rearm_rto` with the probe timer pending:
    /// `tcp_rto_delta_us`), so it fires at once if that time has passed.
    pub(crate) rto_from_head: bool,
    /// The probe outstanding: `snd_max` after it, and whether it was a
    /// retransmission (Linux `tlp_high_seq`, `tlp_retrans`).
    pub(crate) tlp: Option<(u64, bool)>,
    /// RFC 6582 `recover`: `snd_max` when recovery (or the last RTO) began.
    pub(crate) recover: u64,
    /// RFC 6675 `HighRxt`: the highest offset retransmitted in this recovery.
    pub(crate) high_rxt: u64,
    /// A retransmission to send next, from this offset.
    pub(crate) rexmit: Option<u64>,
    /// SACKed ranges above `snd_una`.
    pub(crate) scoreboard: Ranges,
    /// Bytes the ACK being processed newly delivered: cumulatively acknowledged
    /// (and not SACKed before) or newly SACKed (RFC 6937 `DeliveredData`); one SMSS
    /// for a duplicate ACK without SACK.
    pub(crate) delivered: u64,
    /// The segment being timed for an RTT sample (without timestamps): (end offset, sent at).
    pub(crate) timing: Option<(u64, Instant)>,
    /// Segments sent and not cumulatively acknowledged, in sequence order (only
    /// when `track_sent`).
    pub(crate) sent: VecDeque<Sent>,
    pub(crate) track_sent: bool,
    /// Some segment in `sent` may be `extra` (set when one becomes so, cleared by
    /// an ACK that leaves none): the window test counts from `sent` meanwhile.
    pub(crate) maybe_extra: bool,
    /// The last DSACK received was of a loss probe (RACK's reordering window
    /// does not grow for it).
    pub(crate) dsack_tlp: bool,
    /// What the ACK being processed delivered, from `sent`: (sent at, end, ever
    /// retransmitted) of each segment newly acknowledged or SACKed.
    pub(crate) delivered_segs: Vec<(Instant, u64, bool)>,
    /// A loss-detection timer of the recovery (RACK's reordering timer).
    pub(crate) recovery_deadline: Option<Instant>,
    /// How long until the retransmission timer fires (its whole value when the
    /// ACK being processed restarts it): a loss probe never waits longer (Linux
    /// `tcp_schedule_loss_probe`).
    pub(crate) rto_in: Duration,
    /// Linux's undo (`rto = "linux"`): `undo_enabled`, and the state of the
    /// last loss episode.
    pub(crate) undo_enabled: bool,
    pub(crate) undo: Option<Undo>,
    /// F-RTO (RFC 5682 §3 with SACK, Linux `tp->frto`) is judging the current
    /// timeout; `frto_new`: this ACK lets out new data only (step 2b).
    pub(crate) frto: bool,
    pub(crate) frto_new: bool,
    /// An ECN reduction (Linux `TCP_CA_CWR`) is under way until `snd_una` passes
    /// `cwr_high`; `queue_cwr`: the next new segment carries CWR (RFC 3168 §6.1.2).
    pub(crate) in_cwr: bool,
    pub(crate) cwr_high: u64,
    pub(crate) queue_cwr: bool,
    /// The controller sets the window on every ACK itself (BBR): the recovery's
    /// and the endpoint's changes of cwnd are ignored, except a timeout's
    /// (`force_cwnd`).
    pub(crate) cc_owns_cwnd: bool,
    /// Delivery-rate sampling (`tcp/rate.rs`), for controllers fed by it.
    pub(crate) rate: Option<super::rate::RateState>,
    /// Pacing: the rate in bytes per second, and when the next data segment may
    /// leave (Linux `sk_pacing_rate`, `tcp_wstamp_ns`).
    pub(crate) pacing_rate: Option<u64>,
    pub(crate) next_send: Instant,
    /// Random numbers for the controller (BBR's cycle phase), seeded per
    /// connection.
    pub(crate) rand: u64,
    /// A fixed window (seed 003 §V "TCP clamp"): every change of cwnd is ignored.
    pub(crate) clamp: Option<u64>,
    /// Linux `tcp_cwnd_validate`: whether the sender used its whole window in the
    /// current window of data (`is_cwnd_limited`), the most bytes in flight
    /// otherwise (`max_packets_out`), and where that window ends (`cwnd_usage_seq`).
    pub(crate) cwnd_limited: bool,
    pub(crate) max_flight: u64,
    pub(crate) cwnd_usage_seq: u64,
    pub(crate) trace: Option<std::collections::VecDeque<VarEvent>>,
    pub(crate) stats: TcpStats,
    /// Linux's timer wheel with this jiffy (`tcp.timer_wheel`; `tcp/wheel.rs`);
    /// zero: no wheel.
    pub(crate) wheel: Duration,
    /// Where the jiffies counter stood at simulated time 0, as a time (0: jiffy 0
    /// at time 0). A kernel's counter has any phase: `build` draws one per
    /// connection from its ISNs; `kernel_replay` sets a real run's.
    pub(crate) wheel_phase: Duration,
    /// Where the timestamp clock's millisecond stood at simulated time 0, as a
    /// time in [0, 1 ms) (0: a millisecond starts at time 0). A kernel's
    /// millisecond clock (`tcp_clock_ms`) has any phase against the traffic, and
    /// the receiver's RTT estimate (`tcp_rtt_tsopt_us`) counts its whole
    /// milliseconds: `build` draws one per connection from its ISNs.
    pub(crate) ts_phase: Duration,
}

impl Tcb {
    pub(crate) fn new(smss: u64, cwnd: u64, clamp: Option<u64>) -> Tcb {
        Tcb {
            smss,
            cwnd,
            ssthresh: u64::MAX / 4,
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            snd_wnd: 65535,
            dupacks: 0,
            in_recovery: false,
            in_loss: false,
            srtt: None,
            min_rtt: None,
            sack_ok: false,
            probe: false,
            rto_from_head: false,
            tlp: None,
            recover: 0,
            high_rxt: 0,
            rexmit: None,
            scoreboard: Ranges::default(),
            delivered: 0,
            timing: None,
            sent: VecDeque::new(),
            track_sent: false,
            maybe_extra: false,
            dsack_tlp: false,
            delivered_segs: Vec::new(),
            recovery_deadline: None,
            rto_in: Duration::ZERO,
            undo_enabled: false,
            undo: None,
            frto: false,
            frto_new: false,
            in_cwr: false,
            cwr_high: 0,
            queue_cwr: false,
            cc_owns_cwnd: false,
            rate: None,
            pacing_rate: None,
            next_send: Instant::ZERO,
            rand: 0x9e37_79b9_7f4a_7c15,
            clamp,
            cwnd_limited: false,
            max_flight: 0,
            cwnd_usage_seq: 0,
            trace: None,
            stats: TcpStats::default(),
            wheel: Duration::ZERO,
            wheel_phase: Duration::ZERO,
            ts_phase: Duration::ZERO,
        }
    }

    /// When a timer armed at `now` for `after` fires: on Linux's timer wheel
    /// (`tcp.timer_wheel`), else exactly.
    pub(crate) fn timer(&self, now: Instant, after: Duration) -> Instant {
        if self.wheel > Duration::ZERO {
            super::wheel::fire_at(now + self.wheel_phase, after, self.wheel) - self.wheel_phase
        } else {
            now + after
        }
    }

    /// Our timestamp clock at `now` (RFC 7323 TSval, milliseconds), at this
    /// connection's phase.
    #[inline]
    pub(crate) fn ts(&self, now: Instant) -> u32 {
        ts_clock(now + self.ts_phase)
    }

    /// Bytes sent and not yet cumulatively acknowledged.
    pub fn flight(&self) -> u64 {
        self.snd_max - self.snd_una
    }

    /// After the sender has sent what it may (Linux `tcp_cwnd_validate`, called at
    /// the end of `tcp_write_xmit`): `limited` when the window, not the
    /// application or the receiver, stopped it. Kept for a window of data, so an
    /// application-limited moment inside a window does not stop growth.
    pub(crate) fn cwnd_validate(&mut self, limited: bool) {
        let packets_out = self.flight();
        if self.snd_una >= self.cwnd_usage_seq || limited || (!self.cwnd_limited && packets_out > self.max_flight) {
            self.cwnd_limited = limited;
            self.max_flight = packets_out;
            self.cwnd_usage_seq = self.snd_nxt;
        }
    }

    /// Linux `tcp_is_cwnd_limited`: may the window grow? Yes when the sender was
    /// window-limited in this window of data; in slow start also while cwnd is
    /// below twice the most bytes in flight.
    pub(crate) fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited || (self.cwnd < self.ssthresh && self.cwnd < 2 * self.max_flight)
    }

    /// Records a traced variable (when tracing).
    pub(crate) fn push_var(&mut self, now: Instant, var: TcpVar, value: i64) {
        if let Some(t) = &mut self.trace {
            t.push_back(VarEvent { at: now, var, value });
        }
    }

    pub(crate) fn set_cwnd(&mut self, now: Instant, v: u64) {
        if !self.cc_owns_cwnd {
            self.force_cwnd(now, v);
        }
    }

    /// Sets cwnd even when the controller owns it (its own setting, a timeout).
    pub(crate) fn force_cwnd(&mut self, now: Instant, v: u64) {
        // A clamped sender (seed 003 §V) keeps its fixed window whatever happens.
        let v = self.clamp.unwrap_or(v);
        if v != self.cwnd {
            self.cwnd = v;
            self.push_var(now, TcpVar::Cwnd, v as i64);
        }
    }

    pub(crate) fn set_ssthresh(&mut self, now: Instant, v: u64) {
        if v != self.ssthresh {
            self.ssthresh = v;
            self.push_var(now, TcpVar::Ssthresh, v as i64);
        }
    }

    /// Counts a fast retransmission (loss detected without a timeout) and traces it.
    pub(crate) fn count_fast_retransmit(&mut self, now: Instant) {
        self.stats.fast_retransmits += 1;
        self.push_var(now, TcpVar::FastRetransmit, self.stats.fast_retransmits as i64);
    }

    /// Enters loss recovery with the congestion controller's `ssthresh`: the
    /// recovery point is everything sent so far (RFC 6582 `recover`, RFC 6675
    /// `RecoveryPoint`), and no segment is timed through it (Karn).
    pub(crate) fn enter_recovery(&mut self, now: Instant, ssthresh: u64) {
        self.count_fast_retransmit(now);
        if self.undo_enabled {
            self.init_undo(now);
        }
        self.in_recovery = true;
        // A loss found during an ECN reduction becomes the recovery: one
        // reduction (see `recovery::loss_ssthresh`).
        (self.in_cwr, self.queue_cwr) = (false, true);
        self.recover = self.snd_max;
        self.set_ssthresh(now, ssthresh);
        self.timing = None;
    }

    /// A pseudo-random number below `n` (xorshift64*, seeded per connection).
    pub(crate) fn random_below(&mut self, n: u32) -> u32 {
        let mut x = self.rand;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rand = x;
        ((x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) % n.max(1) as u64) as u32
    }

    /// Linux `tcp_current_ssthresh` outside a reduction: the threshold, or 3/4 of
    /// the window if that is more.
    pub(crate) fn current_ssthresh(&self) -> u64 {
        self.ssthresh.max(self.cwnd / 2 + self.cwnd / 4)
    }

    /// A loss episode starts (Linux `tcp_init_undo`): what an undo restores, and
    /// the time of its first retransmission (about now, unless one is still
    /// outstanding from an episode before).
    pub(crate) fn init_undo(&mut self, now: Instant) {
        // In a reduction already, the threshold it set; after an ECN reduction
        // nothing to restore (Linux's `prior_ssthresh` 0: congestion was real).
        let (cwnd, ssthresh) = match (self.in_cwr, self.in_recovery) {
            (true, _) => (0, 0),
            (false, true) => (self.cwnd, self.ssthresh),
            (false, false) => (self.cwnd, self.current_ssthresh()),
        };
        // The first retransmission's time is the connection's `retrans_stamp`,
        // which a new episode does not reset: it is cleared only back in the open
        // state (`on_ack`), so a timeout in a timeout's episode, after an ACK that
        // advanced, keeps the stamp of the episode's first retransmission.
        let stamp = self.undo.and_then(|u| u.stamp).or(Some(self.ts(now)));
        self.undo = Some(Undo { cwnd, ssthresh, stamp, retrans: None, marker: self.snd_una, timeouts: 0 });
    }

    /// An ECN reduction starts (RFC 3168 §6.1.2, Linux `tcp_enter_cwr` and
    /// `tcp_init_cwnd_reduction`): the controller's threshold, CWR on the next new
    /// segment, no undo of it, until what is sent now is acknowledged.
    pub(crate) fn start_cwr(&mut self, now: Instant, ssthresh: u64) {
        (self.in_cwr, self.cwr_high, self.queue_cwr) = (true, self.snd_max, true);
        self.undo = None;
        self.set_ssthresh(now, ssthresh);
        self.stats.ecn_reductions += 1;
        self.push_var(now, TcpVar::EcnReduction, self.stats.ecn_reductions as i64);
    }

    /// Bytes in flight by the sent segments' marks: neither SACKed nor deemed lost
    /// (a lost segment sent again is in flight again; Linux `tcp_packets_in_flight`).
    pub(crate) fn pipe_sent(&self) -> u64 {
        self.sent.iter().filter(|r| !r.sacked).map(|r| (r.end - r.start) * (!r.lost as u64 + r.extra as u64)).sum()
    }

    /// `pipe_sent` in segments, as the kernel counts packets
    /// (`tcp_packets_in_flight`): a short segment is one packet.
    pub(crate) fn pipe_segs(&self) -> u64 {
        self.sent.iter().filter(|r| !r.sacked).map(|r| !r.lost as u64 + r.extra as u64).sum()
    }

    /// Linux's `(lost_out, retrans_out)` by the sent segments' marks: not SACKed
    /// and deemed lost; not SACKed and sent again with that transmission still
    /// out (a lost one resent, or one resent while not deemed lost: `Sent::extra`).
    pub(crate) fn lost_and_retrans_out(&self) -> (u64, u64) {
        let (mut lost_out, mut retrans_out) = (0, 0);
        for r in self.sent.iter().filter(|r| !r.sacked) {
            lost_out += r.marked as u64;
            retrans_out += (r.extra || (r.marked && !r.lost)) as u64;
        }
        (lost_out, retrans_out)
    }

    /// Where the first SACKed block above `from` starts (`or` if none): the end of
    /// the hole at `from`.
    pub(crate) fn hole_end(&self, from: u64, or: u64) -> u64 {
        self.scoreboard.v.iter().find(|b| b.0 > from).map(|b| b.0).unwrap_or(or)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: i64) -> Duration {
        Duration::from_millis(x)
    }

    /// The millisecond clock's phase lies in [0, 1 ms), spreads over it with the
    /// ISNs, and is not the jiffies' phase (two clocks of a kernel keep none to
    /// each other); a connection's timestamps count from it.
    #[test]
    fn the_timestamp_clock_draws_its_own_phase() {
        let mut quarters = [0; 4];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..4_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let (a, b) = (x as u32, (x >> 32) as u32);
            let p = ts_phase_from(a, b);
            assert!(p >= Duration::ZERO && p < ms(1), "{p:?}");
            quarters[(p.nanos() / 250_000) as usize] += 1;
            assert_ne!(p, Duration(crate::tcp::wheel::phase_from(a, b, ms(4)).nanos() % 1_000_000), "{a} {b}");
        }
        assert!(quarters.iter().all(|&n| n > 800), "{quarters:?}");
        let mut t = Tcb::new(1448, 14_480, None);
        assert_eq!(t.ts(Instant(500_000)), 1);
        t.ts_phase = Duration(600_000);
        assert_eq!(t.ts(Instant(500_000)), 2);
        assert_eq!(t.ts(Instant(300_000)), 1);
    }
}
