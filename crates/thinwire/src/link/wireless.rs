//! The wireless link as one sans-IO machine: everything between "an IP packet is
//! offered to the wireless interface" and "an IP packet leaves the far end", in both
//! directions. The simulator, the test harness and the real-time emulator drive this
//! one type.
//!
//! Per direction (0 = down, sent by the gateway; 1 = up, sent by the mobile): a
//! drop-tail IP queue per link-layer session, a radio of a given rate, a
//! propagation delay and a channel deciding each frame's fate when its transmission
//! starts; frames in flight keep FIFO order. Each end runs two link-layer sessions
//! (seed 002 §III): session 0 with the configured protocol (raw, SR/ASR, RLC, IS-707,
//! GSM RLP, GPRS) and session 1 without ARQ ("bypass", for media). An end's ARQ
//! machine sends in its direction and receives the other, so ACKs ride on reverse
//! data frames.
//!
//! A shared cell adds one ARQ session per further mobile ([`WirelessLink::add_mobile`],
//! [`Session::Mobile`]): each mobile's own link-layer entities at both ends (as a
//! UMTS RNC keeps an RLC entity and buffer per UE, TS 25.322 §4.2, or a GPRS PCU a
//! TBF per mobile) with their own IP queues, all multiplexed onto the one radio.
//! GSM RLP and IS-707 are one circuit per mobile and take no further sessions.
//!
//! Multiplexing the sessions onto the radio:
//! - `Mux::Pull` (default): when the radio is free it takes the next frame from one
//!   session, `RoundRobin` (cycling through the sessions that have a frame ready),
//!   `ArqFirst` or `BypassFirst` (strict priorities; the ARQ sessions of several
//!   mobiles take turns among themselves).
//! - `Mux::SharedQueue { limit }`: the sessions push every frame they can produce, as
//!   soon as they can, into one drop-tail frame queue (default 50 frames) served
//!   first come, first served: ns-2's structure, with the link layer above the
//!   interface queue, so ARQ timers also run while frames wait there. A frame that
//!   finds the queue full is lost (the ARQ recovers it like a channel loss).
//!   IS-707 idle frames are not queued: they fill a slot the queue leaves empty
//!   (queued, unlimited idle frames would never let the sender stop filling it).
//!
//! A direction's radio sends at a constant rate, or at the opportunities of a
//! Mahimahi delivery trace ([`WirelessLink::set_capacity`], `link::capacity`).
//!
//! Defaults (from the scenario, `[wireless]`): frame payload 250 B, header 4 B, IP
//! queue 50 packets (GPRS: 120 KB), pull multiplexer with round-robin.
//!
//! ## Driving it
//! Time comes in with every call. The link asks to be woken through [`Timers`]:
//! - on its own (emulator, examples): [`WirelessLink::offer`], then
//!   [`WirelessLink::poll_timeout`] / [`WirelessLink::handle_timeout`], which keep
//!   the link's timers in a queue of its own;
//! - inside another event queue (the simulator): the `*_with` methods take that
//!   queue, so the link's wake-ups are ordered with every other event exactly as if
//!   the link's code were part of the driver.
//!
//! After a timer delivers packets (a frame arrived, or an ARQ timer released
//! buffered data), take them all with [`WirelessLink::poll_deliver`] and offer any
//! immediate answer (a TCP ACK) before the receiving end transmits again: it does so
//! in [`WirelessLink::resume_with`] (the own-queue form does it in the next
//! `handle_timeout`, which `poll_timeout` then asks for at once), so such an answer
//! can go in the next frame, as in the simulator since its first version.
//! Trace events come from [`WirelessLink::poll_event`] when enabled.
use super::{capacity::TraceCapacity, raw::Raw, Arq, ArqMachine, Frame, FrameKind};
use crate::channel::Channel;
use crate::queue::{DropReason, Qdisc, QdiscEvent, Queue, Verdict};
use crate::sched::{EventQueue, Timers};
use crate::time::{Duration, Instant};
use crate::wire::Packet;
use std::collections::VecDeque;

mod air;
mod config;
mod events;
mod ipq;
mod mux;

pub use config::{DirConfig, Mux, Scheduler, Session, WirelessConfig, MAX_MOBILES};
pub use events::{FrameEvent, LinkEvent, LinkStats, LinkTimer, LinkTrace, Offer};

/// When a frame arrives, the packet of the frame at this index among those still
/// in flight (the fifth next to arrive) is fetched into the cache.
const PREFETCH_AHEAD: usize = 4;

struct Radio {
    qs: [Queue; 2],
    /// The IP queues of mobiles 1.. of a shared cell (`WirelessLink::add_mobile`).
    more: Vec<Queue>,
    /// Round robin: the session to try first (with strict priorities and several
    /// mobiles, the ARQ session among them).
    rr: usize,
    shared: Option<(VecDeque<Frame>, usize)>,
    /// Shared-queue mode: the sessions had no frame at the last fill, and nothing
    /// that could give them one (a packet offered, a frame received, an ARQ timer)
    /// has happened since, so the next fill would find nothing either.
    drained: bool,
    busy: bool,
    rate: u64,
    /// A delivery trace instead of the constant rate.
    capacity: Option<TraceCapacity>,
    delay: Duration,
    channel: Channel,
    in_flight: VecDeque<Frame>,
    stats: LinkStats,
    /// When the last frame sent finishes its airtime.
    air_end: Instant,
    /// In an idle stretch (see `air.rs`): the size of the idle frame on the
    /// air (0: not in a stretch), which the sender would repeat at every
    /// chance, and whose arrivals change nothing.
    stretch: u32,
}

impl Radio {
    /// The IP queue of session number `sess`.
    #[inline(always)]
    fn q(&mut self, sess: usize) -> &mut Queue {
        if sess < 2 {
            &mut self.qs[sess]
        } else {
            &mut self.more[sess - 2]
        }
    }
}

/// The link-layer entities of a further mobile of a shared cell, at both ends.
struct MobileSession {
    arq: [Arq; 2],
    sched: [Option<Instant>; 2],
    dirty: [bool; 2],
}

/// When an ARQ machine driven since its timer was last looked at (`dirty`) wants
/// a wake-up that is not already asked for (`sched`): the time to schedule.
#[inline(always)]
fn arq_wakeup(arq: &mut Arq, sched: &mut Option<Instant>, dirty: &mut bool, now: Instant) -> Option<Instant> {
    if !std::mem::take(dirty) {
        return None;
    }
    let t = arq_due(arq, *sched, now)?;
    *sched = Some(t);
    Some(t)
}

/// The wake-up an ARQ machine wants that is earlier than the one asked for
/// (`sched`), if any.
#[inline(always)]
fn arq_due(arq: &mut Arq, sched: Option<Instant>, now: Instant) -> Option<Instant> {
    let t = arq.poll_timeout()?.max(now);
    sched.is_none_or(|x| t < x).then_some(t)
}

/// An ARQ timer event at `now`: false if an earlier one superseded it; else the
/// machine handles its timeout.
#[inline(always)]
fn arq_fire(arq: &mut Arq, sched: &mut Option<Instant>, dirty: &mut bool, now: Instant) -> bool {
    if *sched != Some(now) {
        return false;
    }
    *sched = None;
    arq.handle_timeout(now);
    *dirty = true;
    true
}

pub struct WirelessLink {
    radio: [Radio; 2],
    /// The configured protocol at each end (0 = gateway, 1 = mobile): session 0.
    arq: [Arq; 2],
    /// The bypass session at each end (no ARQ): session 1.
    bypass: [Raw; 2],
    /// Mobiles 1.. of a shared cell: sessions 2.. (empty: one mobile).
    mobiles: Vec<MobileSession>,
    /// Per end, the mobiles (index in `mobiles`) whose machine at that end was
    /// driven since its timer was last looked at (their `dirty` flag): the timers
    /// are looked at for these only, not for every mobile at every step.
    dirty_mobiles: [Vec<usize>; 2],
    arq_sched: [Option<Instant>; 2],
    /// The end's ARQ machine was driven since its timer was last looked at (its
    /// deadline can only have changed then).
    arq_dirty: [bool; 2],
    scheduler: Scheduler,
    header: u32,
    /// An end whose ARQ delivered packets: (end, session, time); it transmits again
    /// once they have been taken.
    delivering: Option<(usize, usize, Instant)>,
    resume: Option<(usize, Instant)>,
    /// The latest arrival of a frame skipped because it would change nothing.
    silent_until: Instant,
    trace: LinkTrace,
    events: VecDeque<LinkEvent>,
    /// The link's own timer queue, for drivers without one.
    own: EventQueue<LinkTimer>,
    /// Skip polls that cannot give a frame (`Radio::drained`); off only in tests
    /// that check the skipping changes nothing.
    skip_polls: bool,
    /// Idle stretches may be run in one step (`Radio::stretch`); off only in
    /// tests that check doing so changes nothing.
    stretches: bool,
}

impl WirelessLink {
    /// `arq[e]` is end `e`'s configured link protocol (0 = gateway, 1 = mobile);
    /// `channels[d]` decides the fate of frames sent in direction `d`.
    pub fn new(cfg: WirelessConfig, arq: [Arq; 2], channels: [Channel; 2]) -> WirelessLink {
        let [c0, c1] = channels;
        let radio = |d: usize, channel: Channel| {
            let dc = cfg.dirs[d];
            Radio {
                qs: [Queue::droptail(dc.queue), Queue::droptail(dc.queue)],
                more: Vec::new(),
                rr: 0,
                shared: match cfg.mux {
                    Mux::SharedQueue { limit } => Some((VecDeque::new(), limit)),
                    Mux::Pull(_) => None,
                },
                drained: false,
                busy: false,
                rate: dc.rate,
                capacity: None,
                delay: dc.delay,
                channel,
                in_flight: VecDeque::new(),
                air_end: Instant::ZERO,
                stretch: 0,
                stats: LinkStats { rate_bps: dc.rate, ..Default::default() },
            }
        };

        WirelessLink {
            radio: [radio(0, c0), radio(1, c1)],
            arq,
            bypass: [Raw::new(cfg.frame), Raw::new(cfg.frame)],
            mobiles: Vec::new(),
            dirty_mobiles: [Vec::new(), Vec::new()],
            arq_sched: [None, None],
            arq_dirty: [true, true],
            scheduler: match cfg.mux {
                Mux::Pull(s) => s,
                Mux::SharedQueue { .. } => Scheduler::RoundRobin,
            },
            header: cfg.header,
            delivering: None,
            resume: None,
            silent_until: Instant::ZERO,
            trace: LinkTrace::default(),
            events: VecDeque::new(),
            own: EventQueue::new(),
            skip_polls: true,
            stretches: true,
        }
    }

    /// Polls every session at every chance instead of skipping the polls that
    /// cannot give a frame: for tests that check the skipping changes nothing
    /// (feature `testkit`).
    #[cfg(feature = "testkit")]
    pub fn poll_always(&mut self) {
        self.skip_polls = false;
    }

    /// Sends every idle frame in its own event instead of running idle
    /// stretches in one step: for tests that check the stretches change
    /// nothing (feature `testkit`).
    #[cfg(feature = "testkit")]
    pub fn no_idle_stretches(&mut self) {
        self.stretches = false;
    }

    /// The earliest time a channel transition not yet reported as an event can be
    /// stamped with (when no channel logs transitions, `i64::MAX` ns): the
    /// two-state channel reveals its transitions only as frames are sent.
    pub fn channel_horizon(&self) -> Instant {
        let mut h = Instant(i64::MAX);
        for r in &self.radio {
            if let Channel::TwoState(c) = &r.channel {
                if c.log.is_some() {
                    h = h.min(c.next_transition());
                }
            }
        }
        h
    }

    /// The latest time a frame that changed nothing reached the far end (such
    /// arrivals are not events): a run that ends when nothing is left to happen
    /// lasted at least this long.
    pub fn silent_until(&self) -> Instant {
        self.silent_until
    }

    /// Chooses the trace events to produce (none by default).
    pub fn set_trace(&mut self, t: LinkTrace) {
        self.trace = t;
        for r in self.radio.iter_mut() {
            if let Channel::TwoState(c) = &mut r.channel {
                c.log = t.channel.then(Vec::new);
            }
        }
    }

    /// Direction `dir` sends at the opportunities of a Mahimahi delivery trace
    /// instead of at its constant rate (which then only sets `LinkStats::rate_bps`).
    pub fn set_capacity(&mut self, dir: usize, c: TraceCapacity) {
        self.radio[dir].capacity = Some(c);
    }

    /// The configured link protocol at end `e` (0 = gateway, 1 = mobile).
    pub fn arq(&self, e: usize) -> &Arq {
        &self.arq[e]
    }

    /// Replaces direction `dir`'s IP queue of `session` (empty) with another
    /// discipline.
    pub fn set_queue(&mut self, dir: usize, session: Session, q: Queue) {
        *self.radio[dir].q(session.index()) = q;
    }

    /// Packets waiting in direction `dir`'s IP queue of `session`.
    pub fn queue_len(&self, dir: usize, session: Session) -> usize {
        let (r, s) = (&self.radio[dir], session.index());
        if s < 2 { &r.qs[s] } else { &r.more[s - 2] }.len()
    }

    /// A further mobile on this cell: its link-layer entities (`arq[e]` at end
    /// `e`: 0 = gateway, 1 = the mobile; the configured protocol, fresh) and its
    /// IP queue per direction (`queues[d]`). Returns its session, to offer its
    /// packets to. Call before any packet is offered.
    ///
    /// # Panics
    /// With GSM RLP or IS-707 (a circuit per mobile: give each its own link), or
    /// beyond [`MAX_MOBILES`].
    pub fn add_mobile(&mut self, arq: [Arq; 2], queues: [Queue; 2]) -> Session {
        assert!(!arq[0].is_circuit(), "GSM RLP and IS-707 carry one mobile per circuit");
        assert!(self.mobiles.len() + 1 < MAX_MOBILES, "at most {MAX_MOBILES} mobiles on a link");
        let [q0, q1] = queues;
        self.radio[0].more.push(q0);
        self.radio[1].more.push(q1);
        self.mobiles.push(MobileSession { arq, sched: [None, None], dirty: [true, true] });
        for list in &mut self.dirty_mobiles {
            list.push(self.mobiles.len() - 1);
        }
        Session::Mobile(self.mobiles.len() as u16)
    }

    /// Mobiles served: 1 + those added with [`add_mobile`](Self::add_mobile).
    pub fn mobiles(&self) -> usize {
        1 + self.mobiles.len()
    }

    // ----- on its own -----

    /// Offers an IP packet to direction `dir` (0 = at the gateway, toward the mobile;
    /// 1 = at the mobile). Call [`handle_timeout`](Self::handle_timeout) for every
    /// timer due up to `now` first.
    pub fn offer(&mut self, now: Instant, dir: usize, session: Session, p: Packet) -> Offer {
        let mut own = std::mem::take(&mut self.own);
        let r = self.offer_with(now, dir, session, p, &mut own);
        self.own = own;
        r
    }

    /// Offers several packets at once: all are queued before the radio looks at the
    /// queue, so a link layer that packs bytes (GSM RLP) sees them together. With
    /// no packets, this only lets direction `dir` transmit what its ARQ has.
    pub fn offer_all(&mut self, now: Instant, dir: usize, session: Session, ps: impl IntoIterator<Item = Packet>) {
        let mut own = std::mem::take(&mut self.own);
        for p in ps {
            self.push(now, dir, session, p);
        }
        self.kick(now, dir, &mut own);
        self.own = own;
    }

    /// When the link next needs [`handle_timeout`](Self::handle_timeout).
    pub fn poll_timeout(&self) -> Option<Instant> {
        if let Some((_, t)) = self.resume {
            return Some(t);
        }
        self.own.peek_time()
    }

    /// Runs the next step due by `now`, at its own scheduled time: a transmitter
    /// resuming after a delivery, or the earliest timer. Take delivered packets
    /// after each call; call again while `poll_timeout() <= now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut own = std::mem::take(&mut self.own);
        if self.resume.is_some() {
            self.resume_with(&mut own);
        } else if own.peek_time().is_some_and(|t| t <= now) {
            let (t, timer) = own.pop().expect("a due timer");
            self.on_timer_with(t, timer, &mut own);
        }
        self.own = own;
    }

    // ----- inside another event queue -----

    /// [`offer`](Self::offer), with wake-ups scheduled in `timers`.
    pub fn offer_with(
        &mut self,
        now: Instant,
        dir: usize,
        session: Session,
        p: Packet,
        timers: &mut impl Timers<LinkTimer>,
    ) -> Offer {
        let offer = self.push(now, dir, session, p);
        self.kick(now, dir, timers);
        offer
    }

    /// A timer scheduled through `timers` has fired at `now`.
    pub fn on_timer_with(&mut self, now: Instant, timer: LinkTimer, timers: &mut impl Timers<LinkTimer>) {
        match timer {
            LinkTimer::RadioDone(d) => self.radio_done(now, d as usize, timers),
            LinkTimer::FrameArrive(d) => self.frame_arrive(now, d as usize),
            LinkTimer::Arq(e) => {
                let e = e as usize;
                if arq_fire(&mut self.arq[e], &mut self.arq_sched[e], &mut self.arq_dirty[e], now) {
                    self.arq_fired(now, e, 0);
                }
            }
            LinkTimer::ArqOf(e, k) => self.mobile_timer(now, e as usize, k as usize),
        }
    }

    /// The timer of end `e`'s session of mobile `k` (>= 1) has fired (kept out of
    /// line: the one-mobile link's timer path stays as it was).
    #[inline(never)]
    fn mobile_timer(&mut self, now: Instant, e: usize, k: usize) {
        let m = &mut self.mobiles[k - 1];
        let was = m.dirty[e];
        if arq_fire(&mut m.arq[e], &mut m.sched[e], &mut m.dirty[e], now) {
            if !was {
                self.dirty_mobiles[e].push(k - 1);
            }
            self.arq_fired(now, e, k + 1);
        }
    }

    /// End `e`'s session `sess` handled a timer: it may deliver packets, and it
    /// transmits again once they are taken.
    #[inline(always)]
    fn arq_fired(&mut self, now: Instant, e: usize, sess: usize) {
        self.radio[e].drained = false;
        self.delivering = Some((e, sess, now));
        self.resume = Some((e, now));
    }

    /// The next packet that left the far end of its direction: (direction, packet).
    pub fn poll_deliver(&mut self) -> Option<(usize, Packet)> {
        let (end, sess, now) = self.delivering?;
        let next = match sess {
            0 => self.arq[end].poll_deliver(),
            1 => self.bypass[end].poll_deliver(),
            s => self.mobile_deliver(end, s),
        };
        let Some(p) = next else {
            self.delivering = None;
            return None;
        };
        let dir = 1 - end;
        if self.trace.link {
            let delay = now - p.meta.born;
            self.events.push_back(LinkEvent::Deliver {
                at: now,
                dir: dir as u8,
                flow: p.meta.flow,
                len: p.size(),
                delay,
                queued: p.meta.queued,
            });
        }
        Some((dir, p))
    }

    #[inline(never)]
    fn mobile_deliver(&mut self, end: usize, sess: usize) -> Option<Packet> {
        self.mobiles[sess - 2].arq[end].poll_deliver()
    }

    /// After a delivery, once every delivered packet has been taken (and answers
    /// offered): the receiving end transmits what it now has.
    pub fn resume_with(&mut self, timers: &mut impl Timers<LinkTimer>) {
        if let Some((end, now)) = self.resume.take() {
            self.delivering = None;
            self.kick(now, end, timers);
        }
    }

    /// The next trace event, if tracing is on.
    pub fn poll_event(&mut self) -> Option<LinkEvent> {
        self.events.pop_front()
    }

    /// Counters per direction (0 = down, 1 = up).
    pub fn stats(&self) -> [LinkStats; 2] {
        let mut out = [self.radio[0].stats.clone(), self.radio[1].stats.clone()];
        for e in 0..2 {
            let [down, up] = &mut out;
            let (sent, received) = if e == 0 { (down, up) } else { (up, down) };
            self.arq[e].counters(sent, received);
            for m in &self.mobiles {
                m.arq[e].counters(sent, received);
            }
        }
        for s in out.iter_mut() {
            s.flr = if s.frames_sent > 0 { s.frames_lost as f64 / s.frames_sent as f64 } else { 0.0 };
        }
        out
    }

    /// Counters at the end of a run of `run_s` seconds (with the radios' utilisation).
    pub fn stats_at_end(&self, run_s: f64) -> [LinkStats; 2] {
        let mut out = self.stats();
        let end = Instant::ZERO + Duration::from_secs_f64(run_s);
        for (s, r) in out.iter_mut().zip(&self.radio) {
            // Only the airtime before the end counts: a frame still on air at
            // the end (a long one on a slow link) once made the share exceed 1.
            let busy = s.busy_ns - (r.air_end - end).nanos().max(0);
            s.utilization = if run_s > 0.0 { (busy as f64 * 1e-9 / run_s).min(1.0) } else { 0.0 };
        }
        out
    }
}
