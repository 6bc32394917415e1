//! The wired link, one direction: a queue discipline (`queue/`, default
//! drop-tail of 1000 packets) in front of a constant-rate transmitter, then a
//! propagation delay. A sans-IO machine that the simulator and the emulator
//! (`realtime.rs`) both drive.
//!
//! Every packet passes through the discipline: offered at its arrival, dequeued
//! when the transmitter is free (at once when it is idle), sent for `size /
//! rate`, and out at the far end `delay` later.
//!
//! Two ways of driving the transmitter, chosen by the discipline:
//! - **Closed form** (`decides_at_enqueue`: drop-tail, RED, PIE): every decision
//!   is made at arrival and packets leave in order, so an accepted packet's
//!   departure is known when it arrives — it starts when the one before it ends
//!   — and its arrival time at the far end is returned at once. The discipline
//!   is still told of each departure at its exact time, lazily, before the next
//!   operation (so RED's idle time and PIE's delay samples are exact). No event
//!   per packet for the transmitter.
//! - **Transmitter events** (CoDel, FQ-CoDel: they decide at dequeue): when the
//!   transmitter is busy the machine asks for a wake-up at the end of the
//!   current transmission ([`Step::wake`]); [`WiredLink::handle_timeout`] then
//!   dequeues the next packet at that time.
//!
//! The queue length an arriving packet sees is the number of accepted packets
//! whose transmission has not started (a packet starting at this very instant
//! has started).
//!
//! Drop-tail (the default everywhere) takes a shorter road to the same
//! decisions: nothing happens at its departures, so an accepted packet goes
//! straight to the transmitter's list, and only the start times and sizes of
//! the waiting ones are kept for the limit (the machine before queue
//! disciplines existed; a test checks both roads agree). Tracing departures
//! (`sojourn`) takes the common road.
use super::{DropReason, Limit, Qdisc, QdiscConfig, QdiscEvent, Queue, Verdict};
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::wire::Packet;
use std::collections::VecDeque;

pub struct WiredLink {
    pub rate: u64,
    pub delay: Duration,
    q: Queue,
    closed_form: bool,
    /// The closed form through the discipline (departures told lazily).
    lazy: bool,
    /// Drop-tail's road: its limit, and the waiting packets' (start, size).
    fast: Option<Limit>,
    waiting: VecDeque<(Instant, u32)>,
    waiting_bytes: u64,
    busy_until: Instant,
    /// Closed form: the start times of the packets in the queue, in order.
    starts: VecDeque<Instant>,
    /// Packets sent, with their arrival time at the far end, in order.
    flight: VecDeque<Packet>,
    /// Their arrival times (apart: a 136-byte pair is copied through memcpy
    /// where a 128-byte packet moves inline).
    arrivals: VecDeque<Instant>,
    /// The transmitter wake-up asked for and not yet handled.
    armed: Option<Instant>,
    pub stats: WiredStats,
    /// Keep the discipline's drops and marks, and every departure, as events.
    trace: (bool, bool),
    events: VecDeque<WiredEvent>,
}

/// One direction's queue counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WiredStats {
    /// Packets dropped: at the full queue, or the discipline's decision.
    pub drops: u64,
    /// Of those, the discipline's decisions (RED, PIE, CoDel).
    pub aqm_drops: u64,
    /// Packets marked Congestion Experienced instead of dropped.
    pub marks: u64,
}

impl WiredStats {
    fn count(&mut self, v: Verdict) {
        match v {
            Verdict::Queued => {}
            Verdict::Marked => self.marks += 1,
            Verdict::Dropped(r) => {
                self.drops += 1;
                self.aqm_drops += (r == DropReason::Aqm) as u64;
            }
        }
    }
}

/// What the machine reports besides verdicts (see [`WiredLink::set_trace`]).
#[derive(Clone, Debug, PartialEq)]
pub enum WiredEvent {
    /// The discipline dropped or marked a packet after queueing it; `qlen` after.
    Queue { ev: QdiscEvent, qlen: u32 },
    /// A packet left the queue for the transmitter after `sojourn`.
    Dequeue { at: Instant, flow: u16, len: u32, sojourn: Duration },
}

/// What an offer or a wake-up asks of the driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// A packet started transmission (or will, in the closed form): its arrival
    /// at the far end, when [`WiredLink::poll_arrival`] gives it.
    pub arrival: Option<Instant>,
    /// Call [`WiredLink::handle_timeout`] at this time.
    pub wake: Option<Instant>,
}

impl WiredLink {
    /// A drop-tail wired link (the seeds').
    pub fn new(rate: u64, delay: Duration, limit: Limit) -> WiredLink {
        WiredLink::with_queue(rate, delay, Queue::droptail(limit))
    }

    /// A wired link with a discipline of `cfg`, drawing from `rng`.
    pub fn with_config(rate: u64, delay: Duration, cfg: QdiscConfig, rng: Rng) -> WiredLink {
        WiredLink::with_queue(rate, delay, Queue::new(cfg, rng))
    }

    pub fn with_queue(rate: u64, delay: Duration, q: Queue) -> WiredLink {
        WiredLink {
            rate,
            delay,
            closed_form: q.decides_at_enqueue(),
            lazy: q.decides_at_enqueue() && !matches!(q, Queue::DropTail(_)),
            fast: match &q {
                Queue::DropTail(d) => Some(d.limit()),
                _ => None,
            },
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            q,
            busy_until: Instant::ZERO,
            starts: VecDeque::new(),
            flight: VecDeque::new(),
            arrivals: VecDeque::new(),
            armed: None,
            stats: WiredStats::default(),
            trace: (false, false),
            events: VecDeque::new(),
        }
    }

    /// Which events to keep: the discipline's drops and marks after queueing
    /// (`aqm`; they are counted either way) and every departure (`sojourn`).
    pub fn set_trace(&mut self, aqm: bool, sojourn: bool) {
        self.trace = (aqm, sojourn);
        if sojourn {
            self.fast = None;
            self.lazy = self.closed_form;
        }
    }

    /// Drop-tail's road: forgets the waiting packets that have started by `now`.
    fn advance(&mut self, now: Instant) {
        while let Some(&(start, size)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= size as u64;
        }
    }

    /// Drop-tail's road for an offer.
    #[inline(always)]
    fn offer_droptail(&mut self, now: Instant, limit: Limit, p: Packet) -> (Verdict, Step) {
        self.advance(now);
        let size = p.size();
        let busy = self.busy_until > now;
        if busy && !limit.fits(self.waiting.len(), self.waiting_bytes, size) {
            let v = Verdict::Dropped(DropReason::Overflow);
            self.stats.count(v);
            return (v, Step { arrival: None, wake: None });
        }
        let start = self.busy_until.max(now);
        if busy {
            self.waiting.push_back((start, size));
            self.waiting_bytes += size as u64;
        }
        (Verdict::Queued, Step { arrival: Some(self.send_sized(start, size, p)), wake: None })
    }

    /// Counts (and keeps, if traced) the discipline's own events.
    fn take_queue_events(&mut self) {
        while let Some(ev) = self.q.poll_event() {
            match &ev {
                QdiscEvent::Drop { reason, .. } => self.stats.count(Verdict::Dropped(*reason)),
                QdiscEvent::Mark { .. } => self.stats.count(Verdict::Marked),
            }
            if self.trace.0 {
                let qlen = self.q.len() as u32;
                self.events.push_back(WiredEvent::Queue { ev, qlen });
            }
        }
    }

    /// Takes the next packet from the discipline at `at` for the transmitter.
    fn dequeue(&mut self, at: Instant) -> Option<Packet> {
        let p = self.q.take(at);
        self.took(at, p.as_ref());
        p
    }

    /// After the discipline gave `p` (or nothing) at `at`: its events, and the
    /// departure's if traced.
    #[inline]
    fn took(&mut self, at: Instant, p: Option<&Packet>) {
        self.take_queue_events();
        if let (true, Some(p)) = (self.trace.1, p) {
            let (flow, len, sojourn) = (p.meta.flow, p.size(), at - p.meta.queued);
            self.events.push_back(WiredEvent::Dequeue { at, flow, len, sojourn });
        }
    }

    /// Sends `p` now (the transmitter is free): its arrival at the far end.
    #[inline(always)]
    fn send(&mut self, now: Instant, p: Packet) -> Instant {
        self.send_sized(now, p.size(), p)
    }

    /// [`send`](Self::send) of a packet of `size` bytes.
    #[inline(always)]
    fn send_sized(&mut self, now: Instant, size: u32, p: Packet) -> Instant {
        self.busy_until = now + Duration::transmission(size as u64, self.rate);
        let arrival = self.busy_until + self.delay;
        self.flight.push_back(p);
        self.arrivals.push_back(arrival);
        arrival
    }

    /// Closed form: tells the discipline of every departure due by `now`.
    fn catch_up(&mut self, now: Instant) {
        while let Some(&s) = self.starts.front() {
            if s > now {
                break;
            }
            self.starts.pop_front();
            let p = self.dequeue(s).expect("a closed-form discipline gives what it accepted");
            let end = s + Duration::transmission(p.size() as u64, self.rate);
            self.flight.push_back(p);
            self.arrivals.push_back(end + self.delay);
        }
    }

    /// Starts the next packet at `now` (the transmitter is free).
    fn start_next(&mut self, now: Instant) -> Option<Instant> {
        let p = self.dequeue(now)?;
        Some(self.send(now, p))
    }

    /// Offers a packet at `now`: the discipline's verdict and what to schedule.
    #[inline]
    pub fn offer(&mut self, now: Instant, p: Packet) -> (Verdict, Step) {
        if let Some(limit) = self.fast {
            return self.offer_droptail(now, limit, p);
        }
        self.offer_other(now, p)
    }

    /// Every other road for an offer (the packet stamped for its sojourn).
    #[inline(never)]
    fn offer_other(&mut self, now: Instant, mut p: Packet) -> (Verdict, Step) {
        p.meta.queued = now;
        let mut step = Step { arrival: None, wake: None };
        if self.closed_form {
            self.catch_up(now);
        }
        if self.busy_until <= now && self.q.is_empty() {
            // Straight through an idle link: enqueue and dequeue at once.
            let (v, p) = self.q.pass(now, p);
            self.stats.count(v);
            self.took(now, p.as_ref());
            step.arrival = p.map(|p| self.send(now, p));
            step.wake = self.arm();
            return (v, step);
        }
        if self.closed_form {
            let size = p.size() as u64;
            let v = self.q.enqueue(now, p);
            self.stats.count(v);
            self.take_queue_events();
            if !matches!(v, Verdict::Dropped(_)) {
                let start = self.busy_until.max(now);
                self.busy_until = start + Duration::transmission(size, self.rate);
                self.starts.push_back(start);
                step.arrival = Some(self.busy_until + self.delay);
                self.catch_up(now);
            }
            return (v, step);
        }
        let v = self.q.enqueue(now, p);
        self.stats.count(v);
        self.take_queue_events();
        if self.busy_until <= now {
            step.arrival = self.start_next(now);
        }
        step.wake = self.arm();
        (v, step)
    }

    /// Asks for a wake-up at the end of the current transmission when packets
    /// wait and none is pending for that time.
    fn arm(&mut self) -> Option<Instant> {
        if self.q.is_empty() || self.armed == Some(self.busy_until) {
            return None;
        }
        self.armed = Some(self.busy_until);
        self.armed
    }

    /// The transmitter is free at `now` (a wake-up asked for by a [`Step`]).
    /// A wake-up that is no longer the pending one (the transmitter was started
    /// by an offer at that instant) does nothing.
    pub fn handle_timeout(&mut self, now: Instant) -> Step {
        let mut step = Step { arrival: None, wake: None };
        if self.closed_form || self.armed != Some(now) {
            return step;
        }
        self.armed = None;
        if self.busy_until <= now {
            step.arrival = self.start_next(now);
        }
        step.wake = self.arm();
        step
    }

    /// The next packet at the far end by `now`, oldest first.
    #[inline]
    pub fn poll_arrival(&mut self, now: Instant) -> Option<Packet> {
        if self.lazy {
            self.catch_up(now);
        }
        match self.arrivals.front() {
            Some(&t) if t <= now => {
                self.arrivals.pop_front();
                self.flight.pop_front()
            }
            _ => None,
        }
    }

    /// The next event kept (see [`set_trace`](Self::set_trace)), oldest first.
    pub fn poll_event(&mut self) -> Option<WiredEvent> {
        self.events.pop_front()
    }

    /// Whether [`poll_event`](Self::poll_event) has anything.
    #[inline]
    pub fn has_events(&self) -> bool {
        !self.events.is_empty()
    }

    /// Packets waiting (not yet being transmitted) at `now`.
    pub fn queue_len(&mut self, now: Instant) -> usize {
        if self.fast.is_some() {
            self.advance(now);
            return self.waiting.len();
        }
        if self.closed_form {
            self.catch_up(now);
        }
        self.q.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::pkt;
    use crate::queue::QdiscKind;
    fn ms(x: i64) -> Instant {
        Instant::ZERO + Duration::from_millis(x)
    }
    /// A packet of `size` bytes on the wire.
    fn sized(size: u32) -> Packet {
        pkt(0, size - 28, false)
    }
    #[test]
    fn packets_follow_each_other_and_the_queue_drops_when_full() {
        // 1000 B at 1 Mbit/s = 8 ms; delay 1 ms; room for 2 waiting packets.
        let mut w = WiredLink::new(1_000_000, Duration::from_millis(1), Limit::Packets(2));
        let arr = |w: &mut WiredLink, t, s| match w.offer(t, sized(s)) {
            (Verdict::Dropped(_), _) => None,
            (_, st) => st.arrival,
        };
        assert_eq!(arr(&mut w, ms(0), 1000), Some(ms(9)));
        assert_eq!(arr(&mut w, ms(1), 1000), Some(ms(17)));
        assert_eq!(arr(&mut w, ms(2), 1000), Some(ms(25)));
        assert_eq!(w.queue_len(ms(2)), 2);
        assert_eq!(arr(&mut w, ms(3), 1000), None, "two waiting, one in transmission: full");
        // At 8 ms the second packet starts; there is room again.
        assert_eq!(w.queue_len(ms(8)), 1);
        assert_eq!(arr(&mut w, ms(8), 1000), Some(ms(33)));
        // Idle link: a packet starts at once.
        assert_eq!(arr(&mut w, ms(100), 500), Some(ms(105)));
        assert_eq!(w.queue_len(ms(100)), 0);
        let mut got = vec![];
        while let Some(p) = w.poll_arrival(ms(200)) {
            got.push(p.size());
        }
        assert_eq!(got, [1000, 1000, 1000, 1000, 500]);
    }
    #[test]
    fn byte_limit_counts_waiting_bytes() {
        let mut w = WiredLink::new(1_000_000, Duration::ZERO, Limit::Bytes(1500));
        let ok = |w: &mut WiredLink, s| !matches!(w.offer(ms(0), sized(s)).0, Verdict::Dropped(_));
        assert!(ok(&mut w, 1000));
        assert!(ok(&mut w, 1000));
        assert!(!ok(&mut w, 600));
        assert!(ok(&mut w, 500));
    }

    /// The three roads agree packet for packet when the discipline is a FIFO:
    /// drop-tail's own road, the closed form through the discipline, and the
    /// discipline driven by transmitter events give the same verdicts and arrivals.
    #[test]
    fn transmitter_events_give_the_closed_forms_schedule() {
        for limit in [Limit::Packets(4), Limit::Bytes(3000)] {
            roads_agree(limit, false);
            roads_agree(limit, true);
        }
    }

    fn roads_agree(limit: Limit, fast: bool) {
        let mut a = WiredLink::new(1_000_000, Duration::from_millis(3), limit);
        let mut b = WiredLink::new(1_000_000, Duration::from_millis(3), limit);
        if !fast {
            a.fast = None;
            a.lazy = true;
        }
        b.fast = None;
        b.closed_form = false;
        let (mut ta, mut tb) = (vec![], vec![]);
        let mut wakes: Vec<Instant> = vec![];
        let mut rng = Rng::stream(3, 0, "t");
        let mut now = Instant::ZERO;
        for _ in 0..300 {
            now += Duration((rng.uniform() * 8e6) as i64);
            let size = 100 + (rng.uniform() * 1400.0) as u32;
            // Transmitter wake-ups due before this arrival run first.
            wakes.sort();
            while let Some(&t) = wakes.first().filter(|&&t| t <= now) {
                wakes.remove(0);
                let s = b.handle_timeout(t);
                tb.extend(s.arrival);
                wakes.extend(s.wake);
            }
            let (va, sa) = a.offer(now, sized(size));
            let (vb, sb) = b.offer(now, sized(size));
            assert_eq!(va, vb);
            assert_eq!(a.queue_len(now), b.queue_len(now));
            ta.extend(sa.arrival);
            tb.extend(sb.arrival);
            wakes.extend(sb.wake);
        }
        while let Some(t) = wakes.pop() {
            let s = b.handle_timeout(t);
            tb.extend(s.arrival);
            wakes.extend(s.wake);
        }
        assert!(ta.len() > 100 && ta.len() < 300, "some drops: {}", ta.len());
        assert_eq!(ta, tb);
    }

    /// CoDel on the wired link: a standing queue from a sender at twice the
    /// link's rate is cut by drops at dequeue, reported as events.
    #[test]
    fn codel_drops_at_the_transmitter() {
        let cfg = QdiscConfig::new(QdiscKind::Codel, Limit::Packets(1000));
        let mut w = WiredLink::with_config(1_000_000, Duration::ZERO, cfg, Rng::stream(1, 0, "w"));
        w.set_trace(true, false);
        let mut wakes = vec![];
        let mut delivered = 0;
        let mut drops = 0;
        for i in 0..2000 {
            let now = ms(4 * i);
            while let Some(&t) = wakes.first().filter(|&&t| t <= now) {
                wakes.remove(0);
                wakes.extend(w.handle_timeout(t).wake);
            }
            let (v, s) = w.offer(now, sized(1000));
            assert_eq!(v, Verdict::Queued);
            wakes.extend(s.wake);
            while w.poll_arrival(now).is_some() {
                delivered += 1;
            }
            while let Some(WiredEvent::Queue { ev: QdiscEvent::Drop { reason, .. }, .. }) = w.poll_event() {
                assert_eq!(reason, DropReason::Aqm);
                drops += 1;
            }
        }
        // Half the offered load is carried; CoDel drops most of the rest and
        // keeps the standing queue short (a drop-tail queue would hold ~1000).
        assert!(delivered > 950 && drops > 900, "{delivered} {drops}");
        assert_eq!((w.stats.drops, w.stats.aqm_drops), (drops, drops));
        assert!(w.queue_len(ms(8000)) < 60, "{}", w.queue_len(ms(8000)));
    }
}
