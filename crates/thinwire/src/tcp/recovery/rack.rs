//! RACK (RFC 8985 §6, as Linux 6.x's `net/ipv4/tcp_recovery.c`): losses detected
//! by time, not by counting duplicate ACKs, with PRR's window during recovery
//! (`prr.rs`, as Linux runs them together).
//!
//! - Every ACK notes the segments it newly acknowledged or SACKed; the most
//!   recently *sent* of them (ties: the higher end) sets `RACK.xmit_ts`,
//!   `RACK.end_seq`, and `RACK.rtt` its RTT (`tcp_rack_advance`). A segment sent
//!   again and delivered within less than the minimum RTT is ignored: the ACK may
//!   be the original's.
//! - Detection (`tcp_rack_detect_loss`): a segment neither SACKed nor already
//!   deemed lost, sent before `RACK.xmit_ts`, is lost once it has gone unacknowledged
//!   for `RACK.rtt + reo_wnd`; otherwise the reordering timer is set for when it
//!   would be (plus 2 ms, `TIMER_SLACK`). A retransmission is
//!   judged by its own send time, so a lost retransmission is found like any
//!   other loss, without a timeout.
//! - The reordering window (`tcp_rack_reo_wnd`, RFC 8985 §6.2 steps 2 and 4):
//!   until reordering is seen (a segment never sent again delivered below the
//!   highest delivered before it), 0 in recovery and once three segments are
//!   SACKed (the duplicate-ACK threshold); otherwise min RTT / 4 times a
//!   multiplier, at most SRTT. The multiplier grows by one at a DSACK, once per
//!   round trip (the SND.NXT of the last step acknowledged), and returns to 1
//!   after 16 recoveries without one (`tcp_rack_update_reo_wnd`); only a DSACK
//!   after reordering was seen, and not a loss probe's, counts (`tcp_dsack_seen`:
//!   `reord_seen`, `FLAG_DSACK_TLP`).
//! - Recovery starts when a segment is deemed lost and `snd_una` has passed the
//!   last recovery point: ssthresh from the controller, PRR's window, the lost
//!   segments resent in sequence order, then new data; it ends when the recovery
//!   point is acknowledged (cwnd = ssthresh).
//! - Without SACK the kernel runs no RACK detection (`tcp_identify_packet_loss`
//!   calls `tcp_newreno_mark_lost` for a Reno connection): the third duplicate ACK
//!   marks the first unacknowledged segment lost and starts the recovery, and each
//!   partial ACK in it the next (NewReno, `tcp_add_reno_sack`). RACK.rtt is not
//!   advanced either (`tcp_clean_rtx_queue`), so a timeout marks every
//!   unacknowledged segment lost.
//!
//! - At a retransmission timeout (§6.3, `tcp_timeout_mark_lost`): the first
//!   unacknowledged segment and those unacknowledged for RACK.rtt are lost, the
//!   rest stays in flight and is not sent again; cwnd = what is in flight + one
//!   segment (`tcp_enter_loss`), growing by the controller's slow start; RACK
//!   chooses what to send until the timeout's recovery point is acknowledged.
//!
//! - Tail loss probe (§7, Linux `tcp_schedule_loss_probe`, `tcp_send_loss_probe`,
//!   `tcp_process_tlp_ack`): with data out and nothing amiss (no recovery, loss,
//!   SACK or duplicate ACK), the probe timeout 2·SRTT + 2 ms (+ 200 ms with one
//!   segment out) is re-armed at each ACK; when it fires the endpoint sends one new
//!   segment whatever cwnd, or the last segment again, and restarts the
//!   retransmission timer. The probe's ACK or SACK lets RACK find a lost tail by
//!   time instead of the timer; a retransmitted probe whose ACK goes past it
//!   repaired a loss: one reduction. Without DSACK, a probe that only duplicated
//!   data still ends in that reduction unless a pure duplicate ACK shows it (as in
//!   the kernel without DSACK).
//!
//! - After a timeout, F-RTO (`tcb.frto_new`, set by the endpoint) may ask for new
//!   data instead of the segments deemed lost, for one ACK. An undo of the
//!   timeout's episode is followed by the open state's detection on the same ACK
//!   (`on_loss_undone`, `after_ack`), which may start a recovery, and, back in
//!   the open state, by the loss probe's timer, set after the undo
//!   (`tcp_set_xmit_timer` at the end of `tcp_ack`).
//!
//! - A segment sent again while not deemed lost (one whose loss an undo took
//!   back: `Sent::extra`, Linux `TCPCB_SACKED_RETRANS` without `TCPCB_LOST`)
//!   is in flight twice
//!   (`Tcb::pipe_sent`); while as many lost segments wait as there are such
//!   segments, new data goes before them (`tcp_xmit_retransmit_queue`: nothing
//!   is resent while `retrans_out ≥ lost_out`); deemed lost by RACK, it is not
//!   resent (`tcp_mark_skb_lost` keeps the bit) and, off the kernel's
//!   time-sorted list (`list_del_init`), never judged again: the timer resends
//!   it (`Sent::unlisted`). A loss probe's retransmission is an ordinary
//!   transmission (`tcp_send_loss_probe` uses `__tcp_retransmit_skb`: no
//!   `TCPCB_SACKED_RETRANS`, no `retrans_out`): deemed lost, it is newly lost,
//!   no lost retransmission, and resent in order.
//!
//! No parameters.
use super::prr::Prr;
use super::sack::new_data;
use super::{LossRecovery, NextSeg, DUP_THRESH};
use crate::tcp::cc::{Cc, CongestionControl};
use crate::tcp::rate::RateState;
use crate::tcp::tcb::{Sent, Tcb};
use crate::tcp::{TcpConfig, TcpStats};
use crate::time::{Duration, Instant};

/// Linux `TCP_TIMEOUT_MIN_US`: 2 ms of slack on the reordering timer and the
/// loss probe, added before the conversion to jiffies: `usecs_to_jiffies(timeout`
/// `+ TCP_TIMEOUT_MIN_US)` in recent kernels, the emulator's 6.18 among them,
/// after "tcp: fix TLP timer and RACK reorder timer floor calculation"; older
/// kernels added two jiffies after the conversion, 8 ms at `CONFIG_HZ=250`. The
/// traced timers of a 6.18 sender fire one or two jiffies before the older rule's.
const TIMER_SLACK: Duration = Duration(2_000_000);
/// The tail loss probe's allowance for a delayed ACK when one segment is out
/// (RFC 8985 `WCDelAckT`; Linux `TCP_RTO_MIN`).
const PTO_DELACK: Duration = Duration(200_000_000);

#[derive(Clone, Debug, Default)]
pub struct Rack {
    prr: Prr,
    /// Send time and end of the most recently sent segment delivered.
    xmit_ts: Option<Instant>,
    end_seq: u64,
    /// The RTT of the segment that last advanced RACK.
    rtt: Duration,
    /// The smallest RTT seen (of segments never sent again).
    min_rtt: Option<Duration>,
    /// `tcb.recovery_deadline` is the probe timeout (not the reordering timer).
    pto: bool,
    /// RFC 8985 §6.2 step 2: a segment never sent again was delivered below the
    /// highest one delivered before it (Linux `tp->reord_seen`).
    reordering_seen: bool,
    /// The highest end delivered (ACKed or SACKed): `RACK.fack`.
    fack: u64,
    /// Step 4: the reordering window in steps of min RTT / 4, grown by one per
    /// round with a DSACK (`reo_wnd_steps`), kept for 16 recoveries
    /// (`reo_wnd_persist`); `dsack_round` the SND.NXT of the last step.
    reo_wnd_mult: u32,
    reo_wnd_persist: u32,
    dsack_round: Option<u64>,
    /// DSACKs received by the last update (`TcpStats::dsacks_received`: a DSACK
    /// may come on an ACK that reaches no recovery hook; the next one counts it).
    dsacks: u64,
    /// In a recovery or a timeout's recovery at the last ACK (to see one end).
    in_episode: bool,
    /// Without SACK, the segments that duplicate ACKs showed delivered above the
    /// hole (Linux's Reno emulation, `sacked_out` of a connection without SACK:
    /// one per duplicate ACK, `tcp_add_reno_sack`, at most what is out less the
    /// holes, `tcp_limit_reno_sacked`; a partial ACK of n segments takes n − 1
    /// of them, `tcp_remove_reno_sacks`; none once `snd_una` advances outside a
    /// recovery or the recovery ends, `tcp_reset_reno_sack`). They are out of the
    /// pipe, as in `tcp_packets_in_flight`: without them a recovery's pipe stayed
    /// at the whole flight, PRR held to its proportional part, the duplicate ACKs
    /// thinned out and the timer fired (a clean 20 Mbit/s link's slow start).
    reno_sacked: u64,
    /// Without SACK, the segments a partial ACK delivered as PRR counts them
    /// (`max(acked − sacked_out, 1)`: the duplicate ACKs counted the rest).
    reno_delivered: u64,
    /// This ACK marked a segment lost (the rate sample's `losses`): PRR then
    /// withholds its extra packet on an ACK that advanced `snd_una`
    /// (`tcp_cwnd_reduction`: `FLAG_SND_UNA_ADVANCED && !newly_lost`).
    newly_lost: bool,
    /// What this ACK leaves for `after_ack`.
    after: AfterAck,
}

/// What an ACK leaves for `after_ack`, once the endpoint has ended the recovery
/// or the timeout's loss episode that the ACK closed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum AfterAck {
    #[default]
    Nothing,
    /// The ACK ends the recovery or the loss episode: its losses are looked for
    /// after the end, with the open state's reordering window.
    Detect,
    /// The ACK undid a timeout's episode (`on_loss_undone`): detection as for
    /// `Detect`, PRR's extra packet only if the ACK moved `snd_una`
    /// (`advanced`), and, back in the open state, the probe timer set after it
    /// (`tcp_set_xmit_timer` at the end of `tcp_ack`).
    Undone { advanced: bool },
}

/// Linux `tcp_mark_skb_lost`: the segment is lost; a retransmission lost again
/// counts as a lost retransmission (`TCPLostRetransmit`), and the delivery-rate
/// sample notes the loss.
fn mark_lost(r: &mut Sent, stats: &mut TcpStats, rate: &mut Option<RateState>) {
    if std::mem::take(&mut r.extra) {
        // Sent again while not deemed lost: now deemed lost, that transmission
        // still out and not resent (`tcp_mark_skb_lost` keeps
        // `TCPCB_SACKED_RETRANS` on a segment it newly marks).
        r.marked = true;
    } else {
        // Lost again with its retransmission out (`TCPCB_LOST` and
        // `TCPCB_SACKED_RETRANS`): a lost retransmission. One sent again by a
        // loss probe was neither (`__tcp_retransmit_skb`): newly lost.
        stats.lost_retransmits += r.marked as u64;
        (r.lost, r.marked) = (true, true);
    }
    if let Some(rate) = rate {
        rate.lost += 1;
    }
}

/// RFC 8985 §6.2 / Linux `TCP_RACK_RECOVERY_THRESH`: recoveries a grown
/// reordering window persists for after the last DSACK.
const REO_WND_PERSIST: u32 = 16;

impl Rack {
    pub fn new(_: &TcpConfig) -> Rack {
        Rack { reo_wnd_mult: 1, ..Rack::default() }
    }

    /// What is in flight (`tcp_packets_in_flight`): sent, not SACKed, not deemed
    /// lost unless sent again, and without SACK less the segments duplicate ACKs
    /// counted (`reno_sacked`, 0 with SACK).
    fn pipe(&self, tcb: &Tcb) -> u64 {
        tcb.pipe_sent().saturating_sub(self.reno_sacked * tcb.smss)
    }

    /// Without SACK, the duplicate-ACK count as an ACK changes it (see
    /// `reno_sacked`). `dupack`: this ACK is a duplicate; else it advanced
    /// `snd_una` by `tcb.delivered` bytes.
    fn count_reno_sacks(&mut self, tcb: &Tcb, dupack: bool) {
        if dupack {
            // In a timeout's recovery only a duplicate ACK for F-RTO's new data
            // counts (`tcp_process_loss`).
            if !tcb.in_loss || tcb.snd_max > tcb.recover {
                let lost = tcb.sent.iter().filter(|r| r.lost).count() as u64;
                let out = tcb.sent.len() as u64;
                let cap = out.saturating_sub(lost.max(1).min(out));
                self.reno_sacked = (self.reno_sacked + 1).min(cap);
            }
            return;
        }
        let acked = tcb.delivered.div_ceil(tcb.smss);
        if tcb.in_recovery {
            self.reno_delivered = acked.saturating_sub(self.reno_sacked).max(1);
            self.reno_sacked -= acked.saturating_sub(1).min(self.reno_sacked);
        } else {
            self.reno_sacked = 0;
        }
    }

    /// RFC 8985 §6.2 steps 2 and 4 (Linux `tcp_rack_update_reo_wnd`, the
    /// reordering seen by `tcp_sacktag_one` / `tcp_clean_rtx_queue`): note
    /// reordering, grow the window at a DSACK (once per round), and let it
    /// shrink back after 16 recoveries without one.
    fn update_reo_wnd(&mut self, tcb: &Tcb) {
        // A DSACK grows the window only once reordering was seen, before this
        // ACK (`tcp_dsack_seen` sets `rack.dsack_seen` if `reord_seen`: a DSACK
        // without reordering tells of a needless timeout or probe, not of a
        // window too small), and never a loss probe's (`Tcb::dsack_tlp`).
        let reordering_before = self.reordering_seen;
        let prior_fack = self.fack;
        for &(_, end, retx) in &tcb.delivered_segs {
            if !retx && end < prior_fack {
                self.reordering_seen = true;
            }
            self.fack = self.fack.max(end);
        }
        self.fack = self.fack.max(tcb.snd_una);
        if self.dsack_round.is_some_and(|r| tcb.snd_una >= r) {
            self.dsack_round = None;
        }
        let episode = tcb.in_recovery || tcb.in_loss;
        let dsack = tcb.stats.dsacks_received > std::mem::replace(&mut self.dsacks, tcb.stats.dsacks_received);
        if dsack && reordering_before && !tcb.dsack_tlp && self.dsack_round.is_none() {
            self.dsack_round = Some(tcb.snd_nxt.max(tcb.snd_max));
            self.reo_wnd_mult = (self.reo_wnd_mult + 1).min(0xFF);
            self.reo_wnd_persist = REO_WND_PERSIST;
        } else if self.in_episode && !episode {
            self.reo_wnd_persist = self.reo_wnd_persist.saturating_sub(1);
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 1;
            }
        }
        self.in_episode = episode;
    }

    /// RFC 8985 `RACK_update` for the segments this ACK delivered.
    fn advance(&mut self, tcb: &Tcb, now: Instant) -> bool {
        let mut advanced = false;
        // Linux's `tcp_min_rtt` takes every RTT sample, the handshake's too: a
        // short probe's RTT may be below every full segment's.
        if let Some(m) = tcb.min_rtt {
            self.min_rtt = Some(self.min_rtt.map_or(m, |x| x.min(m)));
        }
        for &(xmit, end, retx) in &tcb.delivered_segs {
            let rtt = now - xmit;
            if !retx && self.min_rtt.is_none_or(|m| rtt < m) {
                self.min_rtt = Some(rtt);
            }
            if retx && self.min_rtt.is_some_and(|m| rtt < m) {
                continue; // perhaps the original's ACK
            }
            advanced = true;
            self.rtt = rtt;
            if self.xmit_ts.is_none_or(|t| xmit > t || (xmit == t && end > self.end_seq)) {
                self.xmit_ts = Some(xmit);
                self.end_seq = end;
            }
        }
        advanced
    }

    /// Linux `tcp_rack_reo_wnd`: none in recovery or with three segments SACKed
    /// unless reordering was seen; else min RTT / 4 per step, at most SRTT.
    fn reo_wnd(&self, tcb: &Tcb) -> Duration {
        if !self.reordering_seen {
            let sacked = tcb.sent.iter().filter(|r| r.sacked).count() as u32;
            if tcb.in_recovery || tcb.in_loss || sacked >= DUP_THRESH {
                return Duration::ZERO;
            }
        }
        let w = self.min_rtt.map_or(Duration::ZERO, |m| m / 4 * self.reo_wnd_mult as i64);
        tcb.srtt.map_or(w, |s| w.min(s))
    }

    /// RFC 8985 §7.2 (Linux `tcp_schedule_loss_probe`): with data out, SACK on,
    /// no recovery, loss, SACKed data or duplicate ACK, no probe outstanding and
    /// no reordering timer, the probe timeout is 2·SRTT plus 2 ms, plus
    /// 200 ms when one segment is out (a delayed ACK); 1 s without an RTT sample;
    /// never later than the retransmission timer would fire (`tcb.rto_in`): the
    /// probe takes the timer's place, and the timer restarts after it.
    fn schedule_probe(&mut self, tcb: &mut Tcb, now: Instant) {
        if tcb.recovery_deadline.is_some() && !self.pto {
            return;
        }
        // (An outstanding probe does not stop the timer, as in the kernel: when it
        // fires then, no second probe goes out and the retransmission timer runs
        // from the head's transmission, `on_timer`.)
        let open = !tcb.in_recovery && !tcb.in_loss && tcb.dupacks == 0 && tcb.scoreboard.is_empty();
        if !open || !tcb.sack_ok || tcb.flight() == 0 {
            if self.pto {
                (tcb.recovery_deadline, self.pto) = (None, false);
            }
            return;
        }
        let mut pto = match tcb.srtt {
            Some(s) => s * 2 + if tcb.sent.len() <= 1 { PTO_DELACK } else { TIMER_SLACK },
            None => Duration::from_secs(1),
        };
        if tcb.rto_in > Duration::ZERO {
            pto = pto.min(tcb.rto_in);
        }
        (tcb.recovery_deadline, self.pto) = (Some(tcb.timer(now, pto)), true);
    }

    /// Linux `tcp_process_tlp_ack`: an ACK beyond an outstanding probe ends it; if
    /// the probe was a retransmission and the ACK goes past it, the probe repaired a
    /// loss: one reduction (ssthresh from the controller, cwnd = ssthresh).
    fn tlp_ack(tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        let Some((high, retx)) = tcb.tlp else { return };
        if tcb.snd_una < high {
            return;
        }
        if !retx {
            tcb.tlp = None;
        } else if tcb.snd_una > high {
            tcb.tlp = None;
            let ssthresh = super::loss_ssthresh(tcb, cc);
            tcb.set_ssthresh(now, ssthresh);
            tcb.set_cwnd(now, ssthresh);
            tcb.stats.probe_recoveries += 1;
        }
    }

    /// RFC 8985 `RACK_detect_loss`: marks lost segments; returns whether any was,
    /// and sets the reordering timer for those that may yet be.
    fn detect(&mut self, tcb: &mut Tcb, now: Instant) -> bool {
        let Some(ts) = self.xmit_ts else { return false };
        let wait = self.rtt + self.reo_wnd(tcb);
        let mut timer: Option<Duration> = None;
        let mut lost = false;
        for r in tcb.sent.iter_mut() {
            if r.sacked || r.lost || r.unlisted || !(r.xmit < ts || (r.xmit == ts && r.end < self.end_seq)) {
                continue;
            }
            let waited = now - r.xmit;
            if waited >= wait {
                // Off the kernel's time-sorted list: one marked while sent again
                // stays out of RACK's sight until it is sent again.
                r.unlisted = r.extra;
                mark_lost(r, &mut tcb.stats, &mut tcb.rate);
                lost = true;
            } else {
                let left = wait - waited;
                timer = Some(timer.map_or(left, |t| t.max(left)));
            }
        }
        if timer.is_some() || !self.pto {
            tcb.recovery_deadline = timer.map(|t| tcb.timer(now, t + TIMER_SLACK));
            self.pto = false;
        }
        lost
    }

    /// Linux `tcp_xmit_retransmit_queue` resends nothing while `retrans_out ≥
    /// lost_out`: with a segment sent again while not deemed lost (`Sent::extra`,
    /// counted in `retrans_out` only) as many lost ones wait — new data goes
    /// first. (Without such a segment the two counts differ by the lost
    /// segments not yet resent.)
    fn retransmissions_held(tcb: &Tcb) -> bool {
        if !tcb.sent.iter().any(|r| r.extra && !r.sacked) {
            return false;
        }
        let (lost_out, retrans_out) = tcb.lost_and_retrans_out();
        retrans_out >= lost_out
    }

    /// The first unacknowledged segment deemed lost (without SACK); whether it
    /// was not already.
    fn mark_head_lost(tcb: &mut Tcb) -> bool {
        let una = tcb.snd_una;
        match tcb.sent.iter_mut().find(|r| r.start <= una && una < r.end) {
            Some(r) if !r.lost => {
                mark_lost(r, &mut tcb.stats, &mut tcb.rate);
                true
            }
            _ => false,
        }
    }

    /// Linux `tcp_enter_recovery`: PRR's counts start (inside an ECN reduction
    /// they go on), the controller's threshold (`loss_ssthresh`), no probe.
    fn enter(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        if !tcb.in_cwr {
            self.prr.start(tcb);
        }
        let ssthresh = super::loss_ssthresh(tcb, cc);
        tcb.enter_recovery(now, ssthresh);
        tcb.tlp = None;
    }

    /// Marks losses; enters recovery on the first. In a timeout's loss episode
    /// (the kernel's Loss state) a fast recovery starts too when a retransmission
    /// is found lost again (`tcp_fastretrans_alert`: `FLAG_LOST_RETRANS` falls
    /// through to `tcp_enter_recovery`), or when the reordering timer finds any
    /// loss (`by_timer`, `tcp_rack_reo_timeout`: any state but Recovery). Its
    /// reduction (`tcp_init_cwnd_reduction`) takes the controller's threshold
    /// from the window the timeout left: a second reduction, to the floor.
    fn detect_and_enter(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant, by_timer: bool) {
        let lost_retx = tcb.stats.lost_retransmits;
        if !self.detect(tcb, now) {
            return;
        }
        self.newly_lost = true;
        if tcb.in_recovery {
            return;
        }
        let from_loss = tcb.in_loss && (by_timer || tcb.stats.lost_retransmits > lost_retx);
        if tcb.snd_una >= tcb.recover || from_loss {
            if from_loss {
                (tcb.in_loss, tcb.frto, tcb.frto_new) = (false, false, false);
            }
            self.enter(tcb, cc, now);
        }
    }
}

impl LossRecovery for Rack {
    fn on_ack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        self.newly_lost = false;
        self.update_reo_wnd(tcb);
        Self::tlp_ack(tcb, cc, now);
        // Without SACK the kernel neither advances RACK (`tcp_clean_rtx_queue` calls
        // `tcp_rack_advance` only for a SACK connection) nor runs its detection
        // (`tcp_identify_packet_loss`: `tcp_newreno_mark_lost`): duplicate and
        // partial ACKs mark the head instead, and RACK.rtt stays 0, so a timeout
        // deems every unacknowledged segment lost (go-back-N).
        if !tcb.sack_ok {
            if !tcb.delivered_segs.is_empty() {
                self.count_reno_sacks(tcb, false);
            }
        } else if self.advance(tcb, now) {
            // The ACK ends the recovery or the loss episode: look after it ends.
            if (tcb.in_recovery || tcb.in_loss) && tcb.snd_una >= tcb.recover {
                self.after = AfterAck::Detect;
            } else {
                self.detect_and_enter(tcb, cc, now, false);
            }
        }
        self.schedule_probe(tcb, now);
    }

    /// Linux `tcp_fastretrans_alert`: the ACK that ends a recovery (step D, the
    /// state back to Open) — or a timeout's loss episode (`tcp_process_loss`,
    /// then the fall-through to the default case) — then runs the loss
    /// detection of the open state (step E), and a segment deemed lost and still
    /// out starts the next recovery at once (`tcp_time_to_recover`: `lost_out`),
    /// with its reduction for this ACK (`tcp_cong_control`). (At the end of a
    /// loss episode the model has grown the window for this ACK already; the
    /// kernel reduces from the window before.)
    /// Without this the segment stayed marked lost outside any recovery, resent
    /// only by the timer (a real run's capture, `docs/studies/sim-vs-real.md`).
    fn after_ack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        let owed = std::mem::take(&mut self.after);
        if owed == AfterAck::Nothing || tcb.in_recovery || tcb.in_loss {
            return;
        }
        self.newly_lost = self.detect(tcb, now);
        // `tcp_time_to_recover`: any segment deemed lost and not yet acknowledged
        // (`lost_out`, which counts a retransmission still out too).
        if tcb.sent.iter().any(|r| r.marked && !r.sacked) {
            self.enter(tcb, cc, now);
            // The ACK advanced `snd_una`: PRR's extra packet unless it marked a
            // loss (`FLAG_SND_UNA_ADVANCED && !newly_lost`).
            let pipe = self.pipe(tcb);
            let advanced = owed != AfterAck::Undone { advanced: false };
            self.prr.reduce_with(tcb, now, advanced && !self.newly_lost, pipe);
        }
        if matches!(owed, AfterAck::Undone { .. }) {
            // The probe timer was judged (`on_ack`) while the episode still ran.
            self.schedule_probe(tcb, now);
        }
    }

    fn on_loss_undone(&mut self, advanced: bool) {
        self.after = AfterAck::Undone { advanced };
    }

    /// Linux `tcp_write_xmit` ends with `tcp_schedule_loss_probe`: the probe timer
    /// restarts after every burst, and the first flight of a connection (no ACK
    /// yet) is probed too.
    fn on_sent(&mut self, tcb: &mut Tcb, now: Instant) {
        self.schedule_probe(tcb, now);
    }

    fn on_timer(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        if std::mem::take(&mut self.pto) {
            if tcb.tlp.is_some() {
                // At most one probe outstanding (`tcp_send_loss_probe`).
                tcb.rto_from_head = true;
            } else {
                tcb.probe = true;
            }
            return;
        }
        let was = tcb.in_recovery;
        self.detect_and_enter(tcb, cc, now, true);
        if tcb.in_recovery && !was {
            // `tcp_rack_reo_timeout` reduces as for one packet delivered
            // (`tcp_cwnd_reduction(sk, 1, …)`): the retransmission goes out, and
            // the packet counts in `prr_delivered`, one more for later ACKs.
            let pipe = self.pipe(tcb);
            self.prr.reduce_by(tcb, now, false, pipe, 1);
        }
    }

    fn on_dupack(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        // A duplicate ACK at a retransmitted probe: the original and the probe
        // both arrived, no loss.
        if tcb.tlp.is_some_and(|(high, retx)| retx && tcb.snd_una == high) && tcb.delivered == 0 {
            tcb.tlp = None;
        }
        // Without SACK the kernel runs no RACK detection (`tcp_identify_packet_loss`):
        // the duplicate ACKs count as SACKed segments (`tcp_add_reno_sack`) and the
        // third marks the head lost (`tcp_time_to_recover`, `tcp_newreno_mark_lost`).
        if !tcb.sack_ok {
            self.count_reno_sacks(tcb, true);
        }
        if !tcb.sack_ok && !tcb.in_recovery && !tcb.in_loss && tcb.dupacks >= DUP_THRESH && tcb.snd_una >= tcb.recover {
            if Self::mark_head_lost(tcb) {
                self.enter(tcb, cc, now);
                // The duplicate ACK delivered one packet (`tcp_add_reno_sack`),
                // which `tcp_cwnd_reduction` counts.
                let pipe = self.pipe(tcb);
                self.prr.reduce_by(tcb, now, false, pipe, 1);
            }
            return;
        }
        if tcb.in_recovery {
            let pipe = self.pipe(tcb);
            self.prr.reduce_with(tcb, now, false, pipe);
        }
    }

    fn on_ece(&mut self, tcb: &mut Tcb, cc: &mut Cc, now: Instant) {
        self.prr.start(tcb);
        let ssthresh = cc.ssthresh(tcb);
        tcb.start_cwr(now, ssthresh);
    }

    fn on_cwr_ack(&mut self, tcb: &mut Tcb, now: Instant, advanced: bool) {
        let pipe = self.pipe(tcb);
        self.prr.reduce_with(tcb, now, advanced, pipe);
    }

    fn on_recovery_ack(&mut self, tcb: &mut Tcb, now: Instant, _acked: u64) {
        if tcb.snd_una < tcb.recover {
            let pipe = self.pipe(tcb);
            if tcb.sack_ok {
                self.prr.reduce_with(tcb, now, !self.newly_lost, pipe);
            } else {
                // NewReno without SACK: a partial ACK shows the next hole, a
                // loss this ACK marked.
                let marked = Self::mark_head_lost(tcb);
                let pipe = self.pipe(tcb);
                self.prr.reduce_by(tcb, now, !marked, pipe, self.reno_delivered);
            }
            return;
        }
        if !tcb.sack_ok && tcb.snd_una == tcb.recover {
            // Without SACK Linux holds the recovery until something above its
            // point is acknowledged (`tcp_try_undo_recovery`, RFC 6582's rule
            // against a false fast retransmit): the duplicate ACKs' count starts
            // again, the window still follows PRR.
            self.reno_sacked = 0;
            let pipe = self.pipe(tcb);
            self.prr.reduce_by(tcb, now, true, pipe, self.reno_delivered);
            return;
        }
        tcb.in_recovery = false;
        if !tcb.sack_ok {
            // What this ACK delivered as Linux counts it without SACK
            // (`tcp_remove_reno_sacks`), for the window's growth on it.
            tcb.delivered = self.reno_delivered * tcb.smss;
        }
        self.reno_sacked = 0;
        tcb.set_cwnd(now, tcb.ssthresh);
    }

    /// RFC 8985 §6.3 `RACK_mark_losses_on_RTO` (Linux `tcp_timeout_mark_lost`):
    /// the first unacknowledged segment, and every other one unacknowledged for
    /// RACK.rtt, is lost; what was sent more recently stays in flight.
    fn on_rto(&mut self, tcb: &mut Tcb, now: Instant) -> bool {
        // Without SACK the duplicate ACKs' count starts again
        // (`tcp_timeout_mark_lost`: `tcp_reset_reno_sack`).
        self.reno_sacked = 0;
        let una = tcb.snd_una;
        for r in tcb.sent.iter_mut().filter(|r| !r.sacked) {
            if !r.lost && (r.start <= una || now - r.xmit >= self.rtt) {
                // A retransmission lost again counts at a timeout too.
                mark_lost(r, &mut tcb.stats, &mut tcb.rate);
            }
        }
        (tcb.recovery_deadline, self.pto) = (None, false);
        !tcb.sent.is_empty()
    }

    fn next_segment(&mut self, tcb: &mut Tcb, data_end: u64) -> NextSeg {
        if tcb.cwnd < self.pipe(tcb) + tcb.smss {
            return NextSeg::Wait;
        }
        // F-RTO's step 2.b (`tcb.frto_new`): new data only, for this ACK.
        let next = match tcb.sent.iter().find(|r| r.lost) {
            Some(r) if !tcb.frto_new && !Self::retransmissions_held(tcb) => NextSeg::Send(r.start, r.end - r.start),
            _ => new_data(tcb, data_end),
        };
        self.prr.sent(tcb, next);
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1000-byte segment from `start`, sent once at `xmit`.
    fn segment(start: u64, xmit: Instant, sacked: bool) -> Sent {
        Sent {
            start,
            end: start + 1000,
            xmit,
            retx: false,
            lost: false,
            marked: false,
            sacked,
            extra: false,
            unlisted: false,
            tx: Default::default(),
        }
    }

    /// RFC 8985 §6.3: at a timeout the first unacknowledged segment and those
    /// unacknowledged for RACK.rtt are lost; the recently sent ones and the SACKed
    /// stay as they are, so the pipe keeps the recent ones.
    #[test]
    fn a_timeout_marks_the_head_and_the_old_segments() {
        let ms = |x: i64| Instant::ZERO + Duration::from_millis(x);
        let mut t = Tcb::new(1000, 10_000, None);
        t.snd_una = 1;
        for (i, sent_at) in [0, 10, 20, 300, 310, 320].into_iter().enumerate() {
            let start = 1 + 1000 * i as u64;
            t.sent.push_back(segment(start, ms(sent_at), i == 1));
        }
        let mut rack = Rack { rtt: Duration::from_millis(200), ..Rack::default() };
        assert!(rack.on_rto(&mut t, ms(400)));
        let lost: Vec<bool> = t.sent.iter().map(|r| r.lost).collect();
        assert_eq!(lost, [true, false, true, false, false, false]);
        assert_eq!(t.pipe_sent(), 3000);
        // The lost ones are resent in order, then new data.
        t.cwnd = 10_000;
        t.snd_wnd = 100_000;
        assert_eq!(rack.next_segment(&mut t, 100_000), NextSeg::Send(1, 1000));
    }

    /// Linux `tcp_rack_detect_loss` takes a segment it marks lost off the
    /// time-sorted list (`list_del_init`) until it is sent again. One sent again
    /// while not deemed lost (an undone timeout's retransmission, `extra`) keeps
    /// that transmission counted when marked (`TCPCB_SACKED_RETRANS`), so no
    /// later ACK finds it lost again: it waits for the timer, not resent and not
    /// a lost retransmission (a real Reno run: the kernel sent new data where the
    /// model resent such a segment, `docs/studies/sim-vs-real.md`).
    #[test]
    fn a_segment_rack_marked_while_sent_again_is_not_judged_again() {
        let ms = |x: i64| Instant::ZERO + Duration::from_millis(x);
        let mut t = Tcb::new(1000, 10_000, None);
        t.snd_una = 1;
        t.snd_max = 3001;
        t.sack_ok = true;
        t.in_recovery = true;
        // Segment 1 sent again at 100 ms while not deemed lost, 2 at 300 ms and
        // SACKed at 500 ms; 3 sent at 400 ms.
        t.sent.push_back(Sent { retx: true, extra: true, ..segment(1, ms(100), false) });
        t.sent.push_back(Sent { retx: true, ..segment(1001, ms(300), true) });
        t.sent.push_back(segment(2001, ms(400), false));
        let mut rack = Rack { rtt: Duration::from_millis(200), xmit_ts: Some(ms(300)), ..Rack::default() };
        assert!(rack.detect(&mut t, ms(500)));
        let head = t.sent[0];
        assert!(head.marked && !head.lost && !head.extra, "deemed lost, its transmission still counted");
        assert_eq!(t.lost_and_retrans_out(), (1, 1));
        // A later ACK delivers segment 3 (sent at 400 ms): segment 1 is not judged again.
        t.sent[2].sacked = true;
        rack.xmit_ts = Some(ms(400));
        rack.detect(&mut t, ms(700));
        let head = t.sent[0];
        assert!(head.marked && !head.lost, "not deemed lost again");
        assert_eq!(t.stats.lost_retransmits, 0);
        assert_eq!(t.pipe_sent(), 1000);
        // Sent again (the timer), it is judged like any other transmission.
        t.sent[0].xmit = ms(800);
        t.sent[0].unlisted = false;
        t.sent.push_back(segment(3001, ms(900), true));
        rack.xmit_ts = Some(ms(900));
        assert!(rack.detect(&mut t, ms(1100)));
        assert!(t.sent[0].lost);
        assert_eq!(t.stats.lost_retransmits, 1);
    }

    /// Without SACK, ACKs do not advance RACK (`tcp_clean_rtx_queue` calls
    /// `tcp_rack_advance` for a SACK connection only): RACK.rtt stays 0 and a
    /// timeout marks every unacknowledged segment lost, the recently sent ones
    /// too — the receiver may hold them above a hole, and nothing would tell.
    #[test]
    fn without_sack_a_timeout_marks_everything_unacknowledged() {
        let ms = |x: i64| Instant::ZERO + Duration::from_millis(x);
        let cfg = TcpConfig { sack: false, ..TcpConfig::default() };
        let mut cc = cfg.cc.make(&cfg);
        for sack_ok in [true, false] {
            let mut t = Tcb::new(1000, 10_000, None);
            t.sack_ok = sack_ok;
            t.snd_una = 1001;
            t.snd_max = 4001;
            for (i, sent_at) in [100, 380, 390].into_iter().enumerate() {
                let start = 1001 + 1000 * i as u64;
                t.sent.push_back(segment(start, ms(sent_at), false));
            }
            // An ACK of a segment sent at 0 ms, at 200 ms: an RTT of 200 ms.
            t.delivered_segs = vec![(ms(0), 1001, false)];
            t.delivered = 1000;
            let mut rack = Rack::new(&cfg);
            rack.on_ack(&mut t, &mut cc, ms(200));
            assert!(rack.on_rto(&mut t, ms(400)));
            let lost: Vec<bool> = t.sent.iter().map(|r| r.lost).collect();
            let want = if sack_ok { [true, false, false] } else { [true, true, true] };
            assert_eq!(lost, want, "sack {sack_ok}");
        }
    }

    /// RFC 8985 §6.2 step 4 (Linux `tcp_rack_update_reo_wnd`): a DSACK adds
    /// min RTT / 4 to the window, once per round trip, up to SRTT; 16 recoveries
    /// without one bring it back. Reordering seen keeps a window in recovery.
    #[test]
    fn the_reordering_window_grows_with_dsacks_and_shrinks_after_16_recoveries() {
        let mut t = Tcb::new(1000, 10_000, None);
        t.srtt = Some(Duration::from_millis(300));
        // The round trip `k` (`snd_una` past the last step's SND.NXT from k = 1
        // on) and one more DSACK received in it.
        let dsack_in_round = |t: &mut Tcb, rack: &mut Rack, k: u64| {
            t.snd_una = 1 + 20_000 * k;
            t.snd_max = t.snd_una + 20_000;
            t.snd_nxt = t.snd_max;
            t.stats.dsacks_received += 1;
            rack.update_reo_wnd(t);
        };
        let mut rack = Rack { min_rtt: Some(Duration::from_millis(100)), ..Rack::new(&TcpConfig::default()) };
        let ms = Duration::from_millis;
        assert_eq!(rack.reo_wnd(&t), ms(25));
        // Without reordering seen a DSACK changes nothing (`tcp_dsack_seen`).
        dsack_in_round(&mut t, &mut rack, 0);
        assert_eq!(rack.reo_wnd(&t), ms(25));
        rack.reordering_seen = true;
        dsack_in_round(&mut t, &mut rack, 0);
        assert_eq!(rack.reo_wnd(&t), ms(50));
        // A second DSACK in the same round trip changes nothing; after it, one step.
        dsack_in_round(&mut t, &mut rack, 0);
        assert_eq!(rack.reo_wnd(&t), ms(50));
        dsack_in_round(&mut t, &mut rack, 1);
        assert_eq!(rack.reo_wnd(&t), ms(75));
        // A loss probe's DSACK, in the next round, changes nothing (`FLAG_DSACK_TLP`).
        t.dsack_tlp = true;
        dsack_in_round(&mut t, &mut rack, 2);
        assert_eq!(rack.reo_wnd(&t), ms(75));
        t.dsack_tlp = false;
        // Capped at SRTT.
        for k in 2..22 {
            dsack_in_round(&mut t, &mut rack, k);
        }
        assert_eq!(rack.reo_wnd(&t), ms(300));
        // In recovery the window is 0 unless reordering was seen.
        t.in_recovery = true;
        rack.reordering_seen = false;
        assert_eq!(rack.reo_wnd(&t), Duration::ZERO);
        rack.reordering_seen = true;
        assert_eq!(rack.reo_wnd(&t), ms(300));
        rack.reordering_seen = false;
        // 16 recoveries end without a DSACK: back to one step.
        for _ in 0..16 {
            t.in_recovery = true;
            rack.update_reo_wnd(&t);
            t.in_recovery = false;
            rack.update_reo_wnd(&t);
        }
        assert_eq!(rack.reo_wnd(&t), ms(25));
    }

    /// Step 2: a segment never sent again, delivered below the highest delivered
    /// before it, is reordering; a retransmission filling a hole is not.
    #[test]
    fn reordering_is_seen_when_an_original_fills_a_hole() {
        let mut t = Tcb::new(1000, 10_000, None);
        let mut rack = Rack::new(&TcpConfig::default());
        let at = Instant::ZERO;
        t.delivered_segs = vec![(at, 3001, false)];
        rack.update_reo_wnd(&t);
        t.delivered_segs = vec![(at, 1001, true)];
        rack.update_reo_wnd(&t);
        assert!(!rack.reordering_seen);
        t.delivered_segs = vec![(at, 2001, false)];
        rack.update_reo_wnd(&t);
        assert!(rack.reordering_seen);
    }
}
