//! The Aggregate Control Block (seed 004 §IV-B, Fig. 6): the wireless-side state
//! shared by every connection to one mobile host — one congestion window (the
//! seeds' fixed window, the clamp of §IV-C / seed 003 §V, by default; any
//! controller of `tcp/cc/` with `proxy.cc`), one RTT estimate and retransmission timer,
//! and one list of unacknowledged segments of all its connections in sending
//! order — with the aggregate loss recovery of §IV-E:
//!
//! - ACK or SACK feedback for a segment raises the counter of every unSACKed
//!   segment of the aggregate sent before it (the GPRS link does not reorder).
//!   Counters rise once per feedback event (an ACK that covers two segments is one
//!   event), the reading of the seed's rule that keeps delayed ACKs from counting
//!   twice.
//! - Feedback on another connection counts for a segment only if the segment it
//!   acknowledges was sent at least `delack_allowance` (200 ms) after this one: a
//!   mobile may hold its ACK of a connection's last short segment for its
//!   delayed-ACK time (Linux: 40–200 ms), and in that time other connections'
//!   ACKs keep arriving. Seed 004 names the hazard and answers it with the
//!   threshold of 3 alone, which suffices at GPRS rates (a segment every ~350 ms)
//!   but not above them: over a 2 Mbit/s link, 200 concurrent short downloads had
//!   2,330 of 3,930 segments retransmitted spuriously. With this rule a delayed
//!   ACK can never raise another connection's counter (the later segment's ACK
//!   cannot overtake it), and at GPRS rates nearly every feedback still counts.
//!   0 gives the seed's rule literally. Feedback on the same connection (SACK)
//!   always counts.
//! - A segment whose counter reaches `retransmit_at` (3) is retransmitted, the
//!   window unchanged; SACKed segments are never retransmitted.
//! - On a timeout the window drops to one probe segment (the oldest unSACKed one,
//!   resent); any ACK or SACK then restores the full window.
//! - When a retransmission (a probe, or a segment resent at three) is answered —
//!   the answer came at least the least RTT after it went out, so it is not the
//!   original's — every unSACKed segment sent before it is due at once (RACK,
//!   RFC 8985 §6.2, the delayed-ACK rule above as its reordering window): the
//!   seed's counters need three later feedback events, which short connections
//!   whose tails were lost in a burst never produce, so recovery went one
//!   segment per timeout, backing off — minutes for a burst.
//!
//! The window's controller (`proxy.cc`, default `clamp`): the aggregate is one
//! sender to the controller, its sequence space the bytes first sent and the
//! bytes delivered (ACKed or SACKed) over all its connections. Each delivery
//! outside a loss episode is an ACK (`on_ack`, with the RTT sample first,
//! `on_rtt`); the first segment due for retransmission starts an episode that
//! lasts until what was sent before it is delivered — one reduction per episode,
//! cwnd = ssthresh = the controller's threshold (Linux's reduction without
//! PRR's pacing of it); the first timeout of a stall takes the threshold too and
//! the window restarts from one segment (`on_rto`), growing from there once the
//! probe is answered. With `clamp` every one of these leaves the window as it
//! is, so the seeds' proxy is unchanged. Not with `bbr`, which needs
//! delivery-rate samples the aggregate does not keep (refused in configuration). Consecutive timeouts
//!   back off linearly: the k-th waits k·max(SRTT, `min_rto`) (capped at
//!   `max_rto`) instead of doubling. The timeout is also the "wireless link
//!   timeout" of §IV-D that zeroes the advertised windows until recovery.
//!
//! Flow control (§IV-D; the seed's formulas are lost in its text, so this is an
//! equivalent stated exactly). Per connection c, Q_c is the data in its queue at
//! the proxy (early-ACKed, not yet sent over the wireless link) and Q = Σ Q_c;
//! the aggregate's buffer target is T = (1 + β)·BDP with β = 0.5. Each connection
//! has an allowance W_c, and the window advertised to its wired sender is
//! max(0, W_c − Q_c), or 0 while the link is stalled (the previous windows return
//! with recovery, since W_c is kept). A new connection starts with
//! W_c = max(2·MSS, T/n), n counting it among the aggregate's open connections —
//! its share of the target, bringing it at once to the others' level instead of
//! a slow start. Afterwards, with W̄ the mean allowance,
//!
//!   dW_c/dt = α·(1 − (Q/T)·(W_c/W̄)),
//!
//! evaluated at every proxy event: the allowance grows at the constant rate α and
//! shrinks with the aggregate's occupancy, each connection in proportion to its
//! allowance (additive increase, proportional decrease), so Q settles at T and the
//! allowances converge to equal shares. W_c stays within [2·MSS, 64 KB]; α
//! defaults to one BDP per second.
use super::sched::Stride;
use crate::tcp::cc::{Cc, CcKind, CongestionControl};
use crate::tcp::rtt::RttEstimator;
use crate::tcp::tcb::Tcb;
use crate::tcp::TcpConfig;
use crate::time::{Duration, Instant};
use crate::wire::IpAddress;

/// One unacknowledged segment on the wireless side.
#[derive(Clone, Debug)]
pub struct Entry {
    pub(crate) conn: usize,
    /// Sequence offsets [start, end) in the connection's server→mobile stream
    /// (a FIN occupies one offset).
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) fin: bool,
    /// Sending order across the aggregate (renewed on retransmission).
    pub(crate) order: u64,
    pub(crate) sent_at: Instant,
    pub(crate) tx: u32,
    pub(crate) counter: u32,
    pub(crate) sacked: bool,
    /// Retransmission decided, not yet sent.
    pub(crate) due: bool,
}

impl Entry {
    pub fn payload(&self) -> u64 {
        self.end - self.start - self.fin as u64
    }
}

pub struct Acb {
    pub(crate) mobile: IpAddress,
    /// The window (`tcb.cwnd`) and threshold its controller keeps; the
    /// aggregate's bytes sent and delivered as `snd_max` and `snd_una`.
    pub(crate) tcb: Tcb,
    cc: Cc,
    /// Delivered bytes that end the current loss episode (None: none open).
    recover: Option<u64>,
    /// One-segment probing after a timeout.
    pub(crate) probing: bool,
    pub(crate) backoff: u32,
    pub(crate) stalled: bool,
    pub(crate) rtt: RttEstimator,
    /// Smallest RTT sampled.
    pub(crate) min_rtt: Option<Duration>,
    pub(crate) deadline: Option<Instant>,
    /// The unacknowledged segments in sending order (`order` increasing: a
    /// retransmission moves to the end).
    pub(crate) list: Vec<Entry>,
    /// Kept as `list` changes (each was a scan of the list, which at 10 Gbit/s
    /// holds ~1,700 segments, for every segment sent — a third of the daemon's
    /// CPU with 100 connections): the unSACKed entries' payload (`outstanding`),
    /// how many entries are unSACKed, and how many are due.
    inflight: u64,
    unsacked: usize,
    due: usize,
    pub conns: Vec<usize>,
    pub(crate) sched: Stride,
    pub(crate) next_order: u64,
}

/// What one ACK from the mobile told the aggregate.
#[derive(Default, Debug)]
pub struct Feedback {
    /// Some entry was newly ACKed or SACKed.
    pub(crate) progress: bool,
    /// (connection, start offset, new counter) of every counter raised.
    pub(crate) counters: Vec<(usize, u64, u32)>,
    /// The RTT sample taken (Karn: only from segments sent once).
    pub(crate) rtt: Option<Duration>,
}

impl Acb {
    /// `clamp`: the fixed window of the `clamp` controller; the others start from
    /// `initial_window` segments of `mss`.
    pub fn new(mobile: IpAddress, cc: CcKind, clamp: u64, mss: u64, initial_window: u32, rtt: RttEstimator) -> Acb {
        let cfg = Self::cc_config(cc, clamp, mss, initial_window);
        let fixed = (cc == CcKind::Clamp).then_some(clamp);
        let mut tcb = Tcb::new(mss, fixed.unwrap_or(mss * initial_window as u64), fixed);
        let mut cc = cc.make(&cfg);
        cc.init(&mut tcb, Instant::ZERO);
        Acb {
            mobile,
            tcb,
            cc,
            recover: None,
            probing: false,
            backoff: 0,
            stalled: false,
            rtt,
            min_rtt: None,
            deadline: None,
            list: Vec::new(),
            inflight: 0,
            unsacked: 0,
            due: 0,
            conns: Vec::new(),
            sched: Stride::default(),
            next_order: 0,
        }
    }

    fn cc_config(cc: CcKind, clamp: u64, mss: u64, initial_window: u32) -> TcpConfig {
        TcpConfig { cc, mss: mss as u32, initial_window, cwnd_clamp: Some(clamp as u32), ..TcpConfig::default() }
    }

    /// The window now.
    pub fn window(&self) -> u64 {
        self.tcb.cwnd
    }

    /// A new fixed window (`estimate_clamp`; only with the `clamp` controller).
    pub(crate) fn set_clamp(&mut self, w: u64, now: Instant) {
        if self.cc.kind() == CcKind::Clamp {
            self.cc = CcKind::Clamp.make(&Self::cc_config(CcKind::Clamp, w, self.tcb.smss, 1));
            self.tcb.clamp = Some(w);
            self.tcb.force_cwnd(now, w);
        }
    }

    /// After a round of sending (Linux `tcp_cwnd_validate`): `limited` when the
    /// window stopped it.
    pub(crate) fn sent_until(&mut self, limited: bool) {
        self.tcb.cwnd_validate(limited);
    }

    /// Bytes in flight: unSACKed entries' payload.
    pub fn outstanding(&self) -> u64 {
        self.inflight
    }

    /// Debug builds: the kept counts are the list's.
    fn check(&self) {
        #[cfg(debug_assertions)]
        {
            let fresh: u64 = self.list.iter().filter(|e| !e.sacked).map(|e| e.payload()).sum();
            debug_assert_eq!(self.inflight, fresh, "kept in-flight bytes");
            debug_assert_eq!(self.unsacked, self.list.iter().filter(|e| !e.sacked).count());
            debug_assert_eq!(self.due, self.list.iter().filter(|e| e.due).count());
            debug_assert!(self.list.windows(2).all(|w| w[0].order < w[1].order), "sending order");
        }
    }

    /// Removes connection `c`'s entries (it was reset or closed).
    pub(crate) fn remove_conn(&mut self, c: usize) {
        let (inflight, unsacked, due) = (&mut self.inflight, &mut self.unsacked, &mut self.due);
        self.list.retain(|e| {
            if e.conn != c {
                return true;
            }
            Self::forget(e, inflight, unsacked, due);
            false
        });
        self.check();
    }

    /// The counts without entry `e`, which leaves the list.
    fn forget(e: &Entry, inflight: &mut u64, unsacked: &mut usize, due: &mut usize) {
        if !e.sacked {
            *inflight -= e.payload();
            *unsacked -= 1;
        }
        *due -= e.due as usize;
    }

    /// The unacknowledged segments, in sending order.
    pub fn entries(&self) -> &[Entry] {
        &self.list
    }

    /// Whether any entry is unSACKed.
    pub(crate) fn any_unsacked(&self) -> bool {
        self.unsacked > 0
    }

    pub fn push(&mut self, conn: usize, start: u64, end: u64, fin: bool, now: Instant) {
        self.tcb.snd_max += end - start - fin as u64;
        self.tcb.snd_nxt = self.tcb.snd_max;
        let order = self.next_order;
        self.next_order += 1;
        self.inflight += end - start - fin as u64;
        self.unsacked += 1;
        self.list.push(Entry {
            conn,
            start,
            end,
            fin,
            order,
            sent_at: now,
            tx: 1,
            counter: 0,
            sacked: false,
            due: false,
        });
    }

    /// Applies connection `conn`'s cumulative ACK (`acked` = first offset not
    /// acknowledged) and SACK blocks; raises counters; marks retransmissions due.
    pub fn feedback(
        &mut self,
        conn: usize,
        acked: u64,
        sacks: &[(u64, u64)],
        now: Instant,
        retransmit_at: u32,
        delack: Duration,
    ) -> Feedback {
        let mut fb = Feedback::default();
        let mut newest: Option<u64> = None;
        let mut newest_sent = Instant::ZERO;
        let mut newest_tx = 1;
        let mut sample: Option<(u64, Duration)> = None;
        let mut delivered = 0;
        for e in self.list.iter_mut().filter(|e| e.conn == conn) {
            let acked_now = e.end <= acked;
            let sacked_now = !acked_now && !e.sacked && sacks.iter().any(|&(l, r)| l <= e.start && e.end <= r);
            if (acked_now && !e.sacked) || sacked_now {
                delivered += e.payload();
            }
            if acked_now || sacked_now {
                if newest.is_none_or(|n| e.order > n) {
                    newest = Some(e.order);
                    newest_sent = e.sent_at;
                    newest_tx = e.tx;
                }
                if e.tx == 1 && sample.is_none_or(|(o, _)| e.order > o) {
                    sample = Some((e.order, now - e.sent_at));
                }
            }
            if sacked_now {
                self.inflight -= e.payload();
                self.unsacked -= 1;
                self.due -= e.due as usize;
                e.sacked = true;
                e.due = false;
            }
        }
        let (inflight, unsacked, due) = (&mut self.inflight, &mut self.unsacked, &mut self.due);
        self.list.retain(|e| {
            if e.conn == conn && e.end <= acked {
                Self::forget(e, inflight, unsacked, due);
                return false;
            }
            true
        });
        let Some(newest) = newest else {
            self.check();
            return fb;
        };
        fb.progress = true;
        if let Some((_, r)) = sample {
            self.rtt.sample(r);
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
            fb.rtt = Some(r);
            (self.tcb.srtt, self.tcb.min_rtt) = (self.rtt.srtt, self.min_rtt);
            self.cc.on_rtt(&mut self.tcb, now, r);
        }
        self.tcb.snd_una = (self.tcb.snd_una + delivered).min(self.tcb.snd_max);
        if self.recover.is_some_and(|r| self.tcb.snd_una >= r) {
            self.recover = None;
        }
        if self.recover.is_none() && !self.probing && delivered > 0 {
            self.cc.on_ack(&mut self.tcb, now, delivered);
        }
        // A retransmission was answered (not the original it resent: the answer
        // took at least the least RTT, as Linux `tcp_rack_advance` checks): what
        // was sent before it and is still unacknowledged is lost — RACK (RFC
        // 8985 §6.2), with the delayed-ACK allowance as its reordering window.
        let rack = newest_tx > 1 && now - newest_sent >= self.min_rtt.unwrap_or(Duration::ZERO);
        let mut lost = false;
        // The list is in sending order: what was sent before `newest` is a prefix.
        for e in self.list.iter_mut().take_while(|e| e.order < newest).filter(|e| !e.sacked) {
            if e.conn != conn && newest_sent - e.sent_at < delack {
                continue; // its own ACK may still be delayed
            }
            e.counter = if rack { e.counter.max(retransmit_at) } else { e.counter + 1 };
            fb.counters.push((e.conn, e.start, e.counter));
            if e.counter >= retransmit_at {
                self.due += !e.due as usize;
                e.due = true;
                lost = true;
            }
        }
        if lost && self.recover.is_none() {
            // A loss episode: one reduction until what is out now is delivered.
            self.recover = Some(self.tcb.snd_max);
            let ssthresh = self.cc.ssthresh(&self.tcb);
            self.tcb.set_ssthresh(now, ssthresh);
            self.tcb.set_cwnd(now, ssthresh);
        }
        self.check();
        fb
    }

    /// Takes the oldest retransmission due, renewing its place in sending order.
    pub(crate) fn take_due(&mut self, now: Instant) -> Option<Entry> {
        if self.due == 0 {
            return None;
        }
        let i = self.list.iter().position(|e| e.due)?;
        Some(self.resend(i, now))
    }

    fn resend(&mut self, i: usize, now: Instant) -> Entry {
        let mut e = self.list.remove(i);
        // A resent entry is unSACKed (the callers pick only those): it stays
        // in flight, at the end of the list.
        self.due -= e.due as usize;
        e.due = false;
        e.counter = 0;
        e.tx += 1;
        e.sent_at = now;
        e.order = self.next_order;
        self.next_order += 1;
        self.list.push(e.clone());
        self.check();
        e
    }

    /// The retransmission timeout: the oldest unSACKed segment goes out again as
    /// the probe. Returns it, or None if nothing was outstanding.
    pub(crate) fn on_timeout(&mut self, now: Instant, min_rto: Duration, max_rto: Duration) -> Option<Entry> {
        let i = self.list.iter().position(|e| !e.sacked)?;
        if self.backoff == 0 && !self.stalled {
            // The stall's first timeout: the controller's threshold, and the
            // window from one segment once the probe is answered.
            let ssthresh = if self.recover.is_some() { self.tcb.ssthresh } else { self.cc.ssthresh(&self.tcb) };
            self.tcb.set_ssthresh(now, ssthresh);
            let one = self.tcb.smss;
            self.tcb.force_cwnd(now, one);
            self.cc.on_rto(&mut self.tcb);
            self.recover = Some(self.tcb.snd_max);
        }
        self.backoff += 1;
        self.probing = true;
        self.stalled = true;
        let base = self.rtt.srtt.unwrap_or(min_rto).max(min_rto);
        self.deadline = Some(now + Duration(base.nanos().saturating_mul(self.backoff as i64)).min(max_rto));
        Some(self.resend(i, now))
    }

    /// After feedback with progress: leave probing, restore the window, re-arm.
    /// Returns true if the link came back from a stall.
    pub(crate) fn on_progress(&mut self, now: Instant) -> bool {
        let recovered = self.probing || self.stalled;
        self.probing = false;
        self.stalled = false;
        self.backoff = 0;
        self.rearm(now);
        recovered
    }

    /// Starts the timer for a first segment sent after the aggregate was idle: the
    /// link must set up its temporary block flows again in both directions (seed
    /// 003 §III), so the timer waits at least `floor` (the initial RTO).
    pub(crate) fn arm_after_idle(&mut self, now: Instant, floor: Duration) {
        self.deadline = Some(now + self.rtt.rto().max(floor));
    }

    /// (Re)starts the timer if segments are outstanding, stops it otherwise.
    pub(crate) fn rearm(&mut self, now: Instant) {
        self.deadline = self.any_unsacked().then(|| now + self.rtt.rto());
    }

    /// Room for another segment of `mss`: outstanding data at least one MSS below
    /// the window; while probing, none beyond the probe.
    pub(crate) fn has_room(&self, mss: u64) -> bool {
        !self.probing && self.outstanding() + mss <= self.tcb.cwnd
    }
}

/// Flow-control allowance step: dW/dt = α·(1 − Q/T), W within [lo, hi].
pub fn allowance_step(w: f64, alpha: f64, dt_s: f64, q: f64, target: f64, lo: f64, hi: f64) -> f64 {
    (w + alpha * dt_s * (1.0 - q / target)).clamp(lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acb() -> Acb {
        Acb::new(
            [0; 4].into(),
            CcKind::Clamp,
            10_000,
            1000,
            10,
            RttEstimator::new(
                Duration::from_secs(3),
                Duration::from_millis(10),
                Duration::from_secs(1),
                Duration::from_secs(60),
            ),
        )
    }
    const T0: Instant = Instant::ZERO;

    #[test]
    fn later_acks_on_any_connection_raise_counters_and_trigger_retransmission_at_three() {
        let mut a = acb();
        a.push(0, 1, 1001, false, T0); // lost
        for i in 0..3 {
            a.push(1, 1 + i * 1000, 1001 + i * 1000, false, T0);
        }
        for (k, acked) in [1001u64, 2001, 3001].into_iter().enumerate() {
            let fb = a.feedback(1, acked, &[], T0 + Duration::from_secs(1), 3, Duration::ZERO);
            assert!(fb.progress);
            assert_eq!(a.list[0].counter, k as u32 + 1);
            assert_eq!(a.list[0].due, k == 2);
        }
        let e = a.take_due(T0).unwrap();
        assert_eq!((e.conn, e.start, e.tx), (0, 1, 2));
        assert!(a.take_due(T0).is_none());
    }

    #[test]
    fn sacked_segments_are_never_retransmitted_and_do_not_count_as_outstanding() {
        let mut a = acb();
        for i in 0..5 {
            a.push(0, 1 + i * 1000, 1001 + i * 1000, false, T0);
        }
        // Segment 1 lost; SACKs for 2, 3, 4 arrive one by one.
        for k in 2..5u64 {
            a.feedback(0, 1001, &[(2001, 1001 + k * 1000)], T0, 3, Duration::ZERO);
        }
        assert!(a.list.iter().filter(|e| e.sacked).count() == 3);
        assert!(a.list.iter().filter(|e| e.due).all(|e| e.start == 1001));
        assert_eq!(a.outstanding(), 1000);
        let e = a.take_due(T0).unwrap();
        assert_eq!(e.start, 1001);
    }

    #[test]
    fn one_feedback_event_raises_a_counter_once() {
        let mut a = acb();
        a.push(0, 1, 1001, false, T0);
        a.push(1, 1, 1001, false, T0);
        a.push(1, 1001, 2001, false, T0);
        a.feedback(1, 2001, &[], T0, 3, Duration::ZERO); // one delayed ACK for two segments
        assert_eq!(a.list[0].counter, 1);
    }

    #[test]
    fn timeouts_probe_with_one_segment_and_back_off_linearly() {
        let mut a = acb();
        a.rtt.sample(Duration::from_secs(2));
        for i in 0..4 {
            a.push(0, 1 + i * 1000, 1001 + i * 1000, false, T0);
        }
        let mut at = T0 + Duration::from_secs(10);
        let mut gaps = vec![];
        for _ in 0..4 {
            let p = a.on_timeout(at, Duration::from_secs(1), Duration::from_secs(60)).unwrap();
            assert!(a.probing && !a.has_room(1000));
            let next = a.deadline.unwrap();
            gaps.push((next - at).as_secs_f64());
            at = next;
            assert_eq!(p.tx, 2); // each probe is the oldest segment not yet probed
        }
        assert_eq!(gaps, vec![2.0, 4.0, 6.0, 8.0]);
        // An ACK restores the full window.
        let fb = a.feedback(0, 1001, &[], at, 3, Duration::ZERO);
        assert!(fb.progress && a.on_progress(at));
        assert!(!a.probing && a.has_room(1000));
    }

    /// A burst lost the tails of five one-segment connections: the first timeout's
    /// probe is answered, and the other four are due at once — not one per
    /// timeout. An answer that comes sooner than the least RTT after the probe
    /// is the original's, and proves nothing.
    #[test]
    fn an_answered_probe_makes_everything_sent_before_it_due() {
        for (answer_after, all_due) in [(Duration::from_secs(2), true), (Duration::from_millis(100), false)] {
            let mut a = acb();
            a.rtt.sample(Duration::from_secs(1));
            a.min_rtt = Some(Duration::from_secs(1));
            for c in 0..5 {
                a.push(c, 1, 1001, false, T0);
            }
            let at = T0 + Duration::from_secs(10);
            let probe = a.on_timeout(at, Duration::from_secs(1), Duration::from_secs(60)).unwrap();
            assert_eq!(probe.conn, 0);
            let t = at + answer_after;
            let fb = a.feedback(0, 1001, &[], t, 3, Duration::from_millis(200));
            assert!(fb.progress && a.on_progress(t));
            let due: Vec<usize> = a.list.iter().filter(|e| e.due).map(|e| e.conn).collect();
            assert_eq!(due, if all_due { vec![1, 2, 3, 4] } else { vec![] }, "answer after {answer_after:?}");
        }
    }

    #[test]
    fn allowance_grows_below_target_and_shrinks_above() {
        let up = allowance_step(5000.0, 1000.0, 1.0, 0.0, 10_000.0, 2920.0, 65535.0);
        let flat = allowance_step(5000.0, 1000.0, 1.0, 10_000.0, 10_000.0, 2920.0, 65535.0);
        let down = allowance_step(5000.0, 1000.0, 1.0, 20_000.0, 10_000.0, 2920.0, 65535.0);
        assert_eq!((up, flat, down), (6000.0, 5000.0, 4000.0));
        assert_eq!(allowance_step(3000.0, 1000.0, 5.0, 30_000.0, 10_000.0, 2920.0, 65535.0), 2920.0);
    }

    #[test]
    fn another_connections_ack_counts_only_past_the_delayed_ack_allowance() {
        let ms = Duration::from_millis;
        let mut a = acb();
        // Connection 0's last short segment, then connection 1's segments 50 ms
        // apart: its ACK may be delayed 200 ms, so ACKs of segments sent within
        // 200 ms of it must not count against it.
        a.push(0, 1, 101, false, T0);
        for i in 0..8 {
            a.push(1, 1 + i * 1000, 1001 + i * 1000, false, T0 + ms(50 * (i as i64 + 1)));
        }
        for i in 0..3u64 {
            a.feedback(1, 1001 + i * 1000, &[], T0 + ms(500), 3, ms(200));
        }
        assert_eq!(a.list[0].counter, 0, "ACKs of segments sent 50-150 ms later do not count");
        for i in 3..6u64 {
            a.feedback(1, 1001 + i * 1000, &[], T0 + ms(600), 3, ms(200));
        }
        // Segments sent 200, 250, 300 ms later: each counts, the third triggers.
        assert_eq!(a.list[0].counter, 3);
        assert!(a.list[0].due);
        // The seed's literal rule (allowance 0) counts every one.
        let mut b = acb();
        b.push(0, 1, 101, false, T0);
        b.push(1, 1, 1001, false, T0 + ms(1));
        b.feedback(1, 1001, &[], T0 + ms(500), 3, Duration::ZERO);
        assert_eq!(b.list[0].counter, 1);
    }
}
