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
use crate::queue::{DropReason, Limit, Qdisc, QdiscEvent, Queue, Verdict};
use crate::sched::{EventQueue, Timers};
use crate::time::{Duration, Instant};
use crate::wire::Packet;
use std::collections::VecDeque;

/// When a frame arrives, the packet of the frame at this index among those still
/// in flight (the fifth next to arrive) is fetched into the cache.
const PREFETCH_AHEAD: usize = 4;

/// A link-layer session on the shared radio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Session {
    /// The configured link protocol (with ARQ unless it is `raw`): the first
    /// mobile's.
    Arq,
    /// No ARQ: frames are sent once (media, seed 002 §III).
    Bypass,
    /// The configured link protocol's session of mobile `k` of a shared cell
    /// ([`WirelessLink::add_mobile`]); `Mobile(0)` is `Arq`.
    Mobile(u16),
}

impl Session {
    /// The session's number on the radio (`Frame::session`): 0 = the first
    /// mobile's ARQ session, 1 = bypass, k + 1 = mobile k's (k >= 1).
    pub fn index(self) -> usize {
        match self {
            Session::Arq | Session::Mobile(0) => 0,
            Session::Bypass => 1,
            Session::Mobile(k) => k as usize + 1,
        }
    }
}

/// The most mobiles one link serves (a session's number fits `Frame::session`).
pub const MAX_MOBILES: usize = 255;

/// How the radio picks between sessions in `Mux::Pull`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scheduler {
    #[default]
    RoundRobin,
    ArqFirst,
    BypassFirst,
}

/// How the sessions share the radio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mux {
    Pull(Scheduler),
    SharedQueue { limit: usize },
}

impl Default for Mux {
    fn default() -> Self {
        Mux::Pull(Scheduler::RoundRobin)
    }
}

/// One direction of the radio.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DirConfig {
    /// Bit/s.
    pub rate: u64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Each session's IP queue: drop-tail of this limit (another discipline:
    /// [`WirelessLink::set_queue`]).
    pub queue: Limit,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WirelessConfig {
    /// Index 0 = down, 1 = up.
    pub dirs: [DirConfig; 2],
    /// Largest frame payload (the bypass session fragments to it), default 250 B.
    pub frame: u32,
    /// Link-layer header bytes per frame, default 4 B.
    pub header: u32,
    pub mux: Mux,
}

/// What became of an offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    Queued,
    /// The session's IP queue dropped it (full, or the AQM's decision).
    QueueFull,
}

/// A wake-up the link asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkTimer {
    /// The radio of direction `.0` finished a frame.
    RadioDone(u8),
    /// The oldest frame in flight in direction `.0` reaches the far end.
    FrameArrive(u8),
    /// The ARQ machine of end `.0` (0 = gateway, 1 = mobile) has a timer due.
    Arq(u8),
    /// The same for the session of mobile `.1` (>= 1) of a shared cell (a byte:
    /// the timer stays two bytes, as the simulator's events).
    ArqOf(u8, u8),
}

/// What a trace records of a frame handed to the radio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameEvent {
    Send,
    Retransmit,
    Ack,
    Nack,
    Status,
    Idle,
    Reset,
}

/// Trace events, in the order they happen. `dir` is the direction of travel;
/// `flow` is `None` for frames that carry no packet's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkEvent {
    /// A packet offered to direction `dir`'s IP queue: queued, marked CE or
    /// dropped; `qlen` is the session queue's length after the event.
    Enqueue { at: Instant, dir: u8, flow: u16, len: u32, qlen: u32, verdict: Verdict },
    /// A packet the IP queue's discipline dropped or marked after it was queued
    /// (CoDel at dequeue, FQ-CoDel's drops from the fattest flow): `reason` None
    /// for a mark.
    QueueAqm { at: Instant, dir: u8, flow: u16, len: u32, qlen: u32, reason: Option<DropReason> },
    /// A packet left direction `dir`'s IP queue for the link layer after
    /// `sojourn` (trace layer `sojourn`).
    Dequeue { at: Instant, dir: u8, flow: u16, len: u32, sojourn: Duration },
    /// A frame lost at the full shared frame queue.
    FrameQueueDrop { at: Instant, dir: u8, flow: Option<u16>, seq: u32, len: u32, limit: u32 },
    /// A frame handed to the radio (`lost`: the channel destroys it).
    Frame {
        at: Instant,
        dir: u8,
        kind: FrameEvent,
        flow: Option<u16>,
        seq: u32,
        ack: Option<u32>,
        len: u32,
        tx: u16,
        lost: bool,
    },
    /// A frame received at the far end.
    FrameRecv { at: Instant, dir: u8, flow: Option<u16>, seq: u32, ack: Option<u32>, len: u32, tx: u16 },
    /// A packet leaves the far end of direction `dir`, `delay` after it was born;
    /// it entered the link's IP queue at `queued`.
    Deliver { at: Instant, dir: u8, flow: u16, len: u32, delay: Duration, queued: Instant },
    /// The two-state channel of `dir` changed state at `at` (logged as frames are sent).
    Channel { at: Instant, dir: u8, bad: bool },
    /// An RLC AMD PDU sent with the poll bit, and the sender's window then:
    /// VT(A) (oldest unacknowledged) and VT(S) (next new sequence number).
    Poll { at: Instant, dir: u8, seq: u32, vt_a: u32, vt_s: u32 },
    /// The contents of an RLC STATUS PDU sent in direction `dir`: the ACK SUFI
    /// (VR(R)), the first missing PDU and how many the BITMAP reports missing, and
    /// an MRW (or MRW_ACK) SUFI's sequence number.
    StatusReport { at: Instant, dir: u8, ack: Option<u32>, first_missing: Option<u32>, missing: u32, mrw: Option<u32> },
}

/// Which trace events to produce (each costs time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkTrace {
    pub link: bool,
    pub queue: bool,
    /// Every packet's departure from an IP queue, with its sojourn time.
    pub sojourn: bool,
    pub channel: bool,
}

crate::described! {
    /// One direction's counters (0 = down, 1 = up), as reported in results.
    #[derive(Default, Clone, Debug, PartialEq)]
    pub struct LinkStats {
        /// Frames handed to the radio.
        pub frames_sent: u64 => (metric, "count", "frames", ""),
        /// Frames the channel destroyed.
        pub frames_lost: u64 => (metric, "count", "lost", ""),
        /// Frame loss ratio: lost / sent.
        pub flr: f64 => (metric, "ratio", "FLR|%", ""),
        /// Data frames sent again.
        pub frames_retransmitted: u64 => (metric, "count", "rexmit", ""),
        pub nack_frames: u64 => (metric, "count", "NACKs", ""),
        pub ack_frames: u64 => (info, "count", "ACKs", ""),
        /// RLC Status PDUs.
        pub status_frames: u64 => (metric, "count", "STATUS", ""),
        /// SDUs the link layer gave up (RLC SDU discard), or frames (IS-707 after its NAK rounds).
        pub sdu_discards: u64 => (metric, "count", "discard", ""),
        /// Retransmission timer expiries (SR/ASR), poll timer expiries (RLC), polls (GSM RLP).
        pub arq_timeouts: u64 => (metric, "count", "ARQ RTOs", ""),
        /// Packets dropped at the IP queue: full, or the AQM's decision.
        pub queue_drops: u64 => (metric, "count", "q drops", ""),
        /// Of those, the AQM's drops (RED, PIE, CoDel; `[wireless] queue`).
        pub queue_aqm_drops: u64 => (info, "count", "", ""),
        /// Packets the IP queue marked Congestion Experienced (ECN) instead.
        pub queue_marks: u64 => (info, "count", "", ""),
        /// Longest IP queue seen (packets).
        pub queue_max: u64 => (info, "count", "q max", ""),
        /// Frames dropped at a full shared frame queue (`mux = "shared-queue"`).
        pub frame_queue_drops: u64 => (info, "count", "fq drops", ""),
        /// Share of the run the radio was sending.
        pub utilization: f64 => (metric, "ratio", "busy|%", ""),
        pub data_frames_sent: u64 => (info, "count", "", ""),
        /// IS-707 idle frames.
        pub idle_frames: u64 => (info, "count", "", ""),
        /// GSM RLP link-reset frames (SABM, UA, DISC) sent.
        pub reset_frames: u64 => (info, "count", "", ""),
        /// GSM RLP: resets started by this direction's sender (N2 exceeded).
        pub link_resets: u64 => (info, "count", "", ""),
        /// GSM RLP: this direction's user bytes thrown away by resets (sender's window
        /// and receiver's out-of-sequence buffer).
        pub flushed_bytes: u64 => (info, "bytes", "", ""),
        /// GSM RLP: the call was dropped (`on_n2 = "drop-call"`, or SABM unanswered).
        pub call_dropped: bool => (info, "bool", "", ""),
        /// PPP frames of this direction discarded by the receiver's deframer (bad FCS).
        pub ppp_damaged: u64 => (info, "count", "", ""),
        /// VJ-compressed packets tossed by the decompressor after a reported error.
        pub vj_tossed: u64 => (info, "count", "", ""),
        /// Packets whose rebuilt bytes failed the IP/TCP checksum at the receiver (VJ
        /// decompression against a stale base).
        pub checksum_drops: u64 => (info, "count", "", ""),
        /// Times the network side's L2R buffer turned this direction's RLP to "not ready".
        pub l2r_busy: u64 => (info, "count", "", ""),
        /// GPRS: temporary block flows set up (first packet after idle) in this direction.
        pub tbf_setups: u64 => (info, "count", "", ""),
        /// GPRS: outages seen by this direction's sender.
        pub outages: u64 => (info, "count", "", ""),
        /// Bytes on the air (frames with headers).
        pub bytes_sent: u64 => (info, "bytes", "", ""),
        /// Airtime used, ns (for `utilization`).
        #[serde(skip)]
        pub busy_ns: i64 => (hidden, "ns", "", ""),
        /// The radio link's rate in bit/s (so analyses can turn frame sizes into airtime).
        pub rate_bps: u64 => (info, "bit/s", "", ""),
    }
}

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
    let t = arq.poll_timeout()?.max(now);
    if sched.is_none_or(|x| t < x) {
        *sched = Some(t);
        return Some(t);
    }
    None
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
        }
    }

    /// Polls every session at every chance instead of skipping the polls that
    /// cannot give a frame: for tests that check the skipping changes nothing
    /// (feature `testkit`).
    #[cfg(feature = "testkit")]
    pub fn poll_always(&mut self) {
        self.skip_polls = false;
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

    fn push(&mut self, now: Instant, dir: usize, session: Session, mut p: Packet) -> Offer {
        p.meta.queued = now;
        let sess = match session {
            Session::Arq | Session::Mobile(0) => 0,
            Session::Bypass => 1,
            Session::Mobile(k) => {
                // Further mobiles' queues take the general road.
                self.radio[dir].drained = false;
                return self.push_aqm(now, dir, k as usize + 1, p);
            }
        };
        let (flow, len) = (p.meta.flow, p.size());
        let r = &mut self.radio[dir];
        r.drained = false;
        let Queue::DropTail(q) = &mut r.qs[sess] else {
            return self.push_aqm(now, dir, sess, p);
        };
        // Drop-tail: the path the link had before queue disciplines.
        let verdict = q.enqueue(now, p);
        let qlen = q.len();
        let dropped = verdict != Verdict::Queued;
        r.stats.queue_drops += dropped as u64;
        self.pushed(now, dir, flow, len, qlen, verdict)
    }

    /// The rest of an offer: the longest queue, the trace, the answer.
    #[inline(always)]
    fn pushed(&mut self, now: Instant, dir: usize, flow: u16, len: u32, qlen: usize, verdict: Verdict) -> Offer {
        let r = &mut self.radio[dir];
        r.stats.queue_max = r.stats.queue_max.max(qlen as u64);
        if self.trace.queue {
            self.events.push_back(LinkEvent::Enqueue {
                at: now,
                dir: dir as u8,
                flow,
                len,
                qlen: qlen as u32,
                verdict,
            });
        }
        if let Verdict::Dropped(_) = verdict {
            Offer::QueueFull
        } else {
            Offer::Queued
        }
    }

    /// An offer to a queue of another discipline (or of a further mobile): its
    /// verdict, then what it did besides (FQ-CoDel's drops from the fattest flow).
    #[inline(never)]
    fn push_aqm(&mut self, now: Instant, dir: usize, sess: usize, p: Packet) -> Offer {
        let (flow, len) = (p.meta.flow, p.size());
        let r = &mut self.radio[dir];
        let verdict = r.q(sess).put(now, p);
        match verdict {
            Verdict::Queued => {}
            Verdict::Marked => r.stats.queue_marks += 1,
            Verdict::Dropped(why) => {
                r.stats.queue_drops += 1;
                r.stats.queue_aqm_drops += (why == DropReason::Aqm) as u64;
            }
        }
        let qlen = r.q(sess).len();
        let offer = self.pushed(now, dir, flow, len, qlen, verdict);
        self.queue_events(now, dir, sess);
        offer
    }

    /// Counts (and traces) what direction `dir`'s queue of session `sess` did
    /// besides its verdicts: drops and marks at dequeue, head drops.
    #[inline(never)]
    fn queue_events(&mut self, now: Instant, dir: usize, sess: usize) {
        while let Some(e) = self.radio[dir].q(sess).poll_event() {
            let r = &mut self.radio[dir];
            let qlen = r.q(sess).len() as u32;
            let (flow, len, reason) = match e {
                QdiscEvent::Drop { packet, reason, .. } => {
                    r.stats.queue_drops += 1;
                    r.stats.queue_aqm_drops += (reason == DropReason::Aqm) as u64;
                    (packet.meta.flow, packet.size(), Some(reason))
                }
                QdiscEvent::Mark { flow, len, .. } => {
                    r.stats.queue_marks += 1;
                    (flow, len, None)
                }
            };
            if self.trace.queue {
                self.events.push_back(LinkEvent::QueueAqm { at: now, dir: dir as u8, flow, len, qlen, reason });
            }
        }
    }

    /// The next packet from direction `d`'s queue of session `sess` at `now`.
    #[inline(always)]
    fn dequeue(&mut self, d: usize, sess: usize, now: Instant) -> Option<Packet> {
        let p = self.radio[d].q(sess).take(now);
        if self.radio[d].q(sess).has_events() {
            self.queue_events(now, d, sess);
        }
        if let (true, Some(p)) = (self.trace.sojourn, &p) {
            let (flow, len, sojourn) = (p.meta.flow, p.size(), now - p.meta.queued);
            self.events.push_back(LinkEvent::Dequeue { at: now, dir: d as u8, flow, len, sojourn });
        }
        p
    }

    /// A timer scheduled through `timers` has fired at `now`.
    pub fn on_timer_with(&mut self, now: Instant, timer: LinkTimer, timers: &mut impl Timers<LinkTimer>) {
        match timer {
            LinkTimer::RadioDone(d) => {
                self.radio[d as usize].busy = false;
                self.kick(now, d as usize, timers);
            }
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

    // ----- the machine -----

    /// Takes the next frame from the sessions of direction `d` in scheduler order;
    /// for the shared frame queue (`queued`), no idle frame.
    ///
    /// Called several times per event and mostly finding nothing, so it is kept
    /// small: handing queued packets to a session (fragmenting, allocating) is
    /// outlined (inlined, it gave every call a 776-byte stack frame to set up:
    /// bench/RESULTS.md, 2026-11-24 (late)).
    fn next_frame(&mut self, d: usize, now: Instant, queued: bool) -> Option<Frame> {
        if !self.mobiles.is_empty() {
            return self.next_frame_cell(d, now, queued);
        }
        let rr = self.radio[d].rr;
        let order = match self.scheduler {
            Scheduler::RoundRobin => [rr, 1 - rr],
            Scheduler::ArqFirst => [0, 1],
            Scheduler::BypassFirst => [1, 0],
        };
        for s in order {
            if let Some(mut f) = self.poll_session(d, s, now, queued) {
                f.session = s as u8;
                self.radio[d].rr = 1 - s;
                return Some(f);
            }
        }
        None
    }

    /// [`next_frame`](Self::next_frame) on a cell of several mobiles: sessions
    /// 0, 2, 3, … (each mobile's ARQ session) and 1 (bypass), in round robin over
    /// all, or with the strict priority between ARQ and bypass and round robin
    /// among the mobiles.
    #[inline(never)]
    fn next_frame_cell(&mut self, d: usize, now: Instant, queued: bool) -> Option<Frame> {
        let n = 2 + self.mobiles.len();
        let rr = self.radio[d].rr;
        // The k-th ARQ session in turn from `rr` (sessions 0, 2, 3, …).
        let arq_turn = |k: usize| match (rr + k) % (n - 1) {
            0 => 0,
            j => j + 1,
        };
        for i in 0..n {
            let s = match self.scheduler {
                Scheduler::RoundRobin => (rr + i) % n,
                Scheduler::ArqFirst if i == n - 1 => 1,
                Scheduler::ArqFirst => arq_turn(i),
                Scheduler::BypassFirst if i == 0 => 1,
                Scheduler::BypassFirst => arq_turn(i - 1),
            };
            if let Some(mut f) = self.poll_session(d, s, now, queued) {
                f.session = s as u8;
                self.radio[d].rr = match (self.scheduler, s) {
                    (Scheduler::RoundRobin, _) => (s + 1) % n,
                    (_, 1) => rr,
                    (_, 0) => 1,
                    (_, s) => s % (n - 1),
                };
                return Some(f);
            }
        }
        None
    }

    /// The next frame of session `s` of direction `d`, handing it queued packets
    /// as it wants them.
    #[inline(always)]
    fn poll_session(&mut self, d: usize, s: usize, now: Instant, queued: bool) -> Option<Frame> {
        if s == 0 {
            self.arq_dirty[d] = true;
            if !self.radio[d].qs[0].is_empty() && self.arq[d].wants_packet() {
                self.feed_arq(d, now);
            }
            let arq = &mut self.arq[d];
            if queued {
                arq.poll_transmit_queued(now)
            } else {
                arq.poll_transmit(now)
            }
        } else if s == 1 {
            // An idle bypass session (no media on the link: most runs) has
            // nothing to give; `poll_transmit` would return `None` unchanged.
            if self.bypass[d].wants_packet() {
                if self.radio[d].qs[1].is_empty() {
                    return None;
                }
                self.feed_bypass(d, now);
            }
            self.bypass[d].poll_transmit(now)
        } else {
            self.poll_mobile(d, s, now, queued)
        }
    }

    /// The next frame of mobile session `s` (>= 2) of direction `d`.
    #[inline(never)]
    fn poll_mobile(&mut self, d: usize, s: usize, now: Instant, queued: bool) -> Option<Frame> {
        self.mobile_driven(s - 2, d);
        while self.mobiles[s - 2].arq[d].wants_packet() {
            match self.dequeue(d, s, now) {
                Some(p) => self.mobiles[s - 2].arq[d].send(now, p),
                None => break,
            }
        }
        let arq = &mut self.mobiles[s - 2].arq[d];
        if queued {
            arq.poll_transmit_queued(now)
        } else {
            arq.poll_transmit(now)
        }
    }

    /// Hands direction `d`'s queued packets to its ARQ session while it wants them.
    #[inline(never)]
    fn feed_arq(&mut self, d: usize, now: Instant) {
        if let (Queue::DropTail(q), false) = (&mut self.radio[d].qs[0], self.trace.sojourn) {
            // Drop-tail without departures traced: nothing to report, the
            // loop the link had before queue disciplines.
            let arq = &mut self.arq[d];
            while arq.wants_packet() {
                match q.dequeue(now) {
                    Some(p) => arq.send(now, p),
                    None => break,
                }
            }
            return;
        }
        while self.arq[d].wants_packet() {
            match self.dequeue(d, 0, now) {
                Some(p) => self.arq[d].send(now, p),
                None => break,
            }
        }
    }

    /// Hands the bypass session of direction `d` its next queued packet.
    #[inline(never)]
    fn feed_bypass(&mut self, d: usize, now: Instant) {
        if let (Queue::DropTail(q), false) = (&mut self.radio[d].qs[1], self.trace.sojourn) {
            if let Some(p) = q.dequeue(now) {
                self.bypass[d].send(now, p);
            }
            return;
        }
        if let Some(p) = self.dequeue(d, 1, now) {
            self.bypass[d].send(now, p);
        }
    }

    /// Shared-queue mode: moves every frame the sessions can produce now into the
    /// frame queue, dropping those that find it full.
    fn fill_shared(&mut self, d: usize, now: Instant) {
        if self.radio[d].drained && self.skip_polls {
            return;
        }
        while let Some(f) = self.next_frame(d, now, true) {
            let r = &mut self.radio[d];
            let (q, limit) = r.shared.as_mut().expect("shared-queue mode");
            if q.len() < *limit {
                q.push_back(f);
                continue;
            }
            r.stats.frame_queue_drops += 1;
            if self.trace.queue {
                let flow = (f.flow != u16::MAX).then_some(f.flow);
                let len = f.size(self.header);
                let limit = *limit as u32;
                self.events.push_back(LinkEvent::FrameQueueDrop {
                    at: now,
                    dir: d as u8,
                    flow,
                    seq: f.seq,
                    len,
                    limit,
                });
            }
        }
        self.radio[d].drained = !self.arq[d].transmits_by_clock();
    }

    /// Starts the next frame of direction `d` if the radio is free; reschedules the
    /// sending end's ARQ timer either way.
    fn kick(&mut self, now: Instant, d: usize, timers: &mut impl Timers<LinkTimer>) {
        let shared = self.radio[d].shared.is_some();
        if self.radio[d].busy {
            // Pushing frames into the shared queue may have started ARQ timers, and
            // a frame just received may have changed them.
            if shared {
                self.fill_shared(d, now);
            }
            self.sched_arq(now, d, timers);
            return;
        }
        if shared {
            self.fill_shared(d, now);
        }
        let next = match &mut self.radio[d].shared {
            Some((q, _)) => match q.pop_front() {
                // An idle frame fills a slot the frame queue leaves empty.
                None if self.arq[d].sends_idle_frames() => self.next_frame(d, now, false),
                f => f,
            },
            None => self.next_frame(d, now, false),
        };
        if let Some(frame) = next {
            self.transmit(now, d, frame, timers);
        }
        self.sched_arq(now, d, timers);
    }

    fn transmit(&mut self, now: Instant, d: usize, frame: Frame, timers: &mut impl Timers<LinkTimer>) {
        let header = self.header;
        let r = &mut self.radio[d];
        let size = frame.size(header);
        let airtime = match &mut r.capacity {
            None => Duration::transmission(size as u64, r.rate),
            Some(c) => match c.send(now, size) {
                Some(done) => done - now,
                None => {
                    // A `once` trace has ended: the radio never sends again.
                    r.busy = true;
                    return;
                }
            },
        };
        let index = r.stats.frames_sent;
        let lost = r.channel.lose(index, now, airtime, size as u64 * 8, frame.tx > 1);
        r.stats.frames_sent += 1;
        r.stats.bytes_sent += size as u64;
        r.stats.busy_ns += airtime.nanos();
        r.air_end = now + airtime;
        let kind = match frame.kind {
            FrameKind::Data => {
                r.stats.data_frames_sent += 1;
                if frame.tx > 1 {
                    r.stats.frames_retransmitted += 1;
                    FrameEvent::Retransmit
                } else {
                    FrameEvent::Send
                }
            }
            FrameKind::Ack => {
                r.stats.ack_frames += 1;
                FrameEvent::Ack
            }
            FrameKind::Nack => {
                r.stats.nack_frames += 1;
                FrameEvent::Nack
            }
            FrameKind::Status => {
                r.stats.status_frames += 1;
                FrameEvent::Status
            }
            FrameKind::Idle => {
                r.stats.idle_frames += 1;
                FrameEvent::Idle
            }
            FrameKind::Reset => {
                r.stats.reset_frames += 1;
                FrameEvent::Reset
            }
        };
        if lost {
            r.stats.frames_lost += 1;
        }
        if self.trace.link {
            let flow = (frame.flow != u16::MAX).then_some(frame.flow);
            let (seq, ack, tx) = (frame.seq, frame.ack, frame.tx);
            self.events.push_back(LinkEvent::Frame {
                at: now,
                dir: d as u8,
                kind,
                flow,
                seq,
                ack,
                len: size,
                tx,
                lost,
            });
        }
        if self.trace.link {
            let arq = match frame.session {
                0 | 1 => &self.arq[d],
                k => &self.mobiles[k as usize - 2].arq[d],
            };
            rlc_rows(&mut self.events, arq, now, d, &frame);
        }
        if let Channel::TwoState(c) = &mut r.channel {
            if let Some(log) = &mut c.log {
                for (at, bad) in log.drain(..) {
                    self.events.push_back(LinkEvent::Channel { at, dir: d as u8, bad });
                }
            }
        }
        r.busy = true;
        timers.schedule(now + airtime, LinkTimer::RadioDone(d as u8));
        if lost {
            return;
        }
        let arrive = now + airtime + r.delay;
        // An arrival that would change nothing at the far end is not an event
        // (unless the link trace records it). Its only trace is the run's end time
        // when the run ends for want of events (`silent_until`).
        if !self.trace.link && frame.session == 0 && self.arq[1 - d].ignores(&frame) {
            self.silent_until = self.silent_until.max(arrive);
            return;
        }
        r.in_flight.push_back(frame);
        timers.schedule(arrive, LinkTimer::FrameArrive(d as u8));
    }

    fn frame_arrive(&mut self, now: Instant, d: usize) {
        let end = 1 - d;
        let in_flight = &mut self.radio[d].in_flight;
        let frame = in_flight.pop_front().expect("frame in flight");
        if let Some(later) = in_flight.get(PREFETCH_AHEAD) {
            super::frame::prefetch(later);
        }
        if self.trace.link {
            let flow = (frame.flow != u16::MAX).then_some(frame.flow);
            let len = frame.size(self.header);
            let (seq, ack, tx) = (frame.seq, frame.ack, frame.tx);
            self.events.push_back(LinkEvent::FrameRecv { at: now, dir: d as u8, flow, seq, ack, len, tx });
        }
        let sess = frame.session as usize;
        self.radio[end].drained = false;
        match sess {
            0 => {
                self.arq[end].on_frame(now, frame);
                self.arq_dirty[end] = true;
            }
            1 => self.bypass[end].on_frame(now, frame),
            s => {
                self.mobiles[s - 2].arq[end].on_frame(now, frame);
                self.mobile_driven(s - 2, end);
            }
        }
        self.delivering = Some((end, sess, now));
        self.resume = Some((end, now));
    }

    /// Asks for end `e`'s ARQ timers: its first mobile's, then the others'.
    fn sched_arq(&mut self, now: Instant, e: usize, timers: &mut impl Timers<LinkTimer>) {
        if let Some(t) = arq_wakeup(&mut self.arq[e], &mut self.arq_sched[e], &mut self.arq_dirty[e], now) {
            timers.schedule(t, LinkTimer::Arq(e as u8));
        }
        if !self.dirty_mobiles[e].is_empty() {
            self.sched_mobiles(now, e, timers);
        }
    }

    /// Mobile `i`'s machine at end `e` was driven: its timer is to be looked at.
    fn mobile_driven(&mut self, i: usize, e: usize) {
        let d = &mut self.mobiles[i].dirty[e];
        if !*d {
            *d = true;
            self.dirty_mobiles[e].push(i);
        }
    }

    /// The timers of the mobiles driven at end `e`, in the mobiles' order.
    #[inline(never)]
    fn sched_mobiles(&mut self, now: Instant, e: usize, timers: &mut impl Timers<LinkTimer>) {
        let mut list = std::mem::take(&mut self.dirty_mobiles[e]);
        list.sort_unstable();
        for &i in &list {
            let m = &mut self.mobiles[i];
            if let Some(t) = arq_wakeup(&mut m.arq[e], &mut m.sched[e], &mut m.dirty[e], now) {
                timers.schedule(t, LinkTimer::ArqOf(e as u8, i as u8 + 1));
            }
        }
        list.clear();
        self.dirty_mobiles[e] = list;
    }
}

/// The RLC rows of a frame just sent in direction `d` (link trace): a poll with
/// the sender's window, or what a STATUS PDU reports.
fn rlc_rows(events: &mut VecDeque<LinkEvent>, arq: &Arq, now: Instant, d: usize, frame: &Frame) {
    if frame.kind == FrameKind::Data && frame.ctl & super::frame::CTL_POLL != 0 {
        if let Some((vt_a, vt_s)) = arq.window() {
            events.push_back(LinkEvent::Poll { at: now, dir: d as u8, seq: frame.seq, vt_a, vt_s });
        }
    }
    if let Some(st) = frame.status() {
        let (ack, first_missing, missing) = match &st.report {
            Some(r) => (Some(r.ack), r.missing.first().copied(), r.missing.len() as u32),
            None => (None, None, 0),
        };
        let mrw = st.mrw.or(st.mrw_ack);
        events.push_back(LinkEvent::StatusReport { at: now, dir: d as u8, ack, first_missing, missing, mrw });
    }
}
