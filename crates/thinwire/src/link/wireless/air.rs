//! The radio itself: starting a frame when the radio is free (its airtime at the
//! constant rate or at a Mahimahi trace's opportunities), the channel's verdict on
//! it, its arrival one propagation delay after its airtime with FIFO order kept,
//! and the ARQ machines' timers rescheduled after each step.
use super::*;

impl WirelessLink {
    /// Starts the next frame of direction `d` if the radio is free; reschedules the
    /// sending end's ARQ timer either way.
    #[inline(always)]
    pub(super) fn kick(&mut self, now: Instant, d: usize, timers: &mut impl Timers<LinkTimer>) {
        self.kick_from(now, d, false, timers);
    }

    /// The radio of direction `d` finished its frame at `now`: the next one
    /// starts, and an idle stretch runs ahead where the driver lets it.
    pub(super) fn radio_done(&mut self, now: Instant, d: usize, timers: &mut impl Timers<LinkTimer>) {
        self.radio[d].busy = false;
        if self.kick_from(now, d, true, timers) {
            self.run_ahead(now, d, timers);
        }
    }

    /// [`kick`](Self::kick); `woken`: at the radio's own wake-up, where the
    /// idle frame that starts or continues a stretch leaves its wake-up to
    /// `run_ahead` (returns true then). One function for both (two copies of
    /// this hot code cost more in the instruction cache than the flag).
    #[inline(never)]
    fn kick_from(&mut self, now: Instant, d: usize, woken: bool, timers: &mut impl Timers<LinkTimer>) -> bool {
        let shared = self.radio[d].shared.is_some();
        if self.radio[d].busy {
            // A packet offered, a frame received or a timer: the sender may
            // have something other than its idle frame now.
            if self.radio[d].stretch != 0 {
                self.recheck_stretch(d);
            }
            // Pushing frames into the shared queue may have started ARQ timers, and
            // a frame just received may have changed them.
            if shared {
                self.fill_shared(d, now);
            }
            self.sched_arq(now, d, timers);
            return false;
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
        let mut ahead = false;
        if let Some(frame) = next {
            ahead = self.transmit(now, d, frame, woken, timers);
        }
        self.sched_arq(now, d, timers);
        ahead
    }

    /// Puts `frame` on the air; true if it leaves its wake-up to `run_ahead`
    /// (`woken` and an idle frame that starts or continues a stretch).
    #[inline(always)]
    fn transmit(
        &mut self,
        now: Instant,
        d: usize,
        frame: Frame,
        woken: bool,
        timers: &mut impl Timers<LinkTimer>,
    ) -> bool {
        let header = self.header;
        let repeats = frame.kind == FrameKind::Idle && self.may_stretch(d, &frame);
        let ahead = woken && repeats && self.may_run_ahead(now, d, timers);
        let r = &mut self.radio[d];
        let size = frame.size(header);
        let airtime = match &mut r.capacity {
            None => Duration::transmission(size as u64, r.rate),
            Some(c) => match c.send(now, size) {
                Some(done) => done - now,
                None => {
                    // A `once` trace has ended: the radio never sends again.
                    r.busy = true;
                    return false;
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
        // (Other drivers than the simulator wake the radio for every frame.)
        r.stretch = if repeats { size } else { 0 };
        if !ahead {
            timers.schedule(now + airtime, LinkTimer::RadioDone(d as u8));
        }
        if lost {
            return ahead;
        }
        let arrive = now + airtime + r.delay;
        // An arrival that would change nothing at the far end is not an event
        // (unless the link trace records it). Its only trace is the run's end time
        // when the run ends for want of events (`silent_until`).
        if !self.trace.link && frame.session == 0 && self.arq[1 - d].ignores(&frame) {
            self.silent_until = self.silent_until.max(arrive);
            return ahead;
        }
        r.in_flight.push_back(frame);
        timers.schedule(arrive, LinkTimer::FrameArrive(d as u8));
        ahead
    }

    pub(super) fn frame_arrive(&mut self, now: Instant, d: usize) {
        let end = 1 - d;
        let in_flight = &mut self.radio[d].in_flight;
        let frame = in_flight.pop_front().expect("frame in flight");
        if let Some(later) = in_flight.get(PREFETCH_AHEAD) {
            crate::link::frame::prefetch(later);
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

    /// Whether idle frame `frame`, about to go on the air in direction `d`,
    /// starts an idle stretch: the sender would give the same frame at every
    /// chance until something is offered to it, reaches it or times out, and
    /// nothing else would go instead (one mobile, the pull multiplexer, an empty
    /// bypass session); the far end ignores it, so its arrival is not an event;
    /// the radio's airtime is its constant rate; no trace records frames or
    /// channel states; the channel is not a test's script (whose decisions may
    /// depend on the order of the two directions' calls).
    #[inline(never)]
    fn may_stretch(&self, d: usize, frame: &Frame) -> bool {
        let r = &self.radio[d];
        self.stretches
            && frame.session == 0
            && self.mobiles.is_empty()
            && r.shared.is_none()
            && r.capacity.is_none()
            && !self.trace.link
            && !self.trace.channel
            && !matches!(r.channel, Channel::Scripted(_))
            && self.arq[1 - d].ignores(frame)
            && self.stretch_holds(d)
    }

    /// Whether the stretch's frame just put on the air at `now` may leave its
    /// wake-up to `run_ahead`: the driver lets machines run ahead, and this
    /// step asks for no ARQ timer (`sched_arq`, after the frame; it never does
    /// in a stretch, whose sender's timers change only through the steps that
    /// end it, but if it did, the frame's wake-up must be asked for first, as
    /// always).
    #[inline(never)]
    fn may_run_ahead(&mut self, now: Instant, d: usize, timers: &impl Timers<LinkTimer>) -> bool {
        if timers.run_ahead_until().is_none() {
            return false;
        }
        let asks = self.arq_dirty[d] && arq_due(&mut self.arq[d], self.arq_sched[d], now).is_some();
        !asks
    }

    /// Whether direction `d`'s next frame would repeat the idle frame it last
    /// sent: its sender says so (nothing to NAK, retransmit or send since, and
    /// idle frames left), and both IP queues and the bypass session are empty.
    /// The far end keeps ignoring the frame (its V(R) never decreases, and the
    /// V(S) the frame carries changes only when data is sent).
    fn stretch_holds(&self, d: usize) -> bool {
        let r = &self.radio[d];
        self.arq[d].idle_repeats() > 0 && r.qs[0].is_empty() && r.qs[1].is_empty() && self.bypass[d].wants_packet()
    }

    /// Something touched direction `d`'s sender during a stretch: it ends
    /// unless the next frame would still repeat the idle frame.
    #[inline(never)]
    fn recheck_stretch(&mut self, d: usize) {
        if !self.stretch_holds(d) {
            self.radio[d].stretch = 0;
        }
    }

    /// Whether direction `d`'s radio is in an idle stretch (`may_stretch`): its
    /// next frame would repeat the idle frame on the air, as far as the packets
    /// offered, frames received and timers since have changed (each such step
    /// looks again, `stretch_holds`).
    fn in_stretch(&self, d: usize) -> bool {
        self.radio[d].stretch != 0
    }

    /// The airtime of direction `d`'s idle frame in a stretch (as `transmit`
    /// computes it: a stretch needs the constant rate).
    fn stretch_airtime(&self, d: usize) -> Duration {
        Duration::transmission(self.radio[d].stretch as u64, self.radio[d].rate)
    }

    /// Direction `d`'s radio has just put the idle frame of a stretch on the
    /// air at `now` (its wake-up, `radio_done`). Where the driver lets it run
    /// ahead (the simulator: [`Timers::run_ahead_until`]), the frames its next
    /// wake-ups would send go now, one per airtime, those starting before the
    /// driver's next other event (or just after the run's last instant) — with
    /// the other direction's, if that radio, in a stretch too, is the next to
    /// wake — since nothing else happens before then and the two directions'
    /// frames touch nothing in common; then each radio asks to be woken when it
    /// is next free, as its last frame would have. At most 65,536 airtimes
    /// ahead (the driver stays responsive). Each frame sent ahead counts as the
    /// wake-up it replaces ([`Timers::count_ahead`]).
    ///
    /// The wake-ups keep the order they would have had: those now asked for
    /// come after every event already scheduled, as they would have, having
    /// been asked for by each radio's last frame, after those were scheduled.
    /// When the two radios are next free at the same instant, the one whose
    /// last frame started first (the longer airtime) is woken first; with equal
    /// airtimes, the one woken first at the first instant both were woken at:
    /// `d` if the other's wake-up was at `now` too, else the other (its wake-up
    /// was asked for before `d`'s frame at `now` went out). The step that sent
    /// `d`'s frame asked for no ARQ timer (`may_run_ahead`), which would have
    /// come after the frame's wake-up.
    #[cold]
    #[inline(never)]
    fn run_ahead(&mut self, now: Instant, d: usize, timers: &mut impl Timers<LinkTimer>) {
        const SPAN: i64 = 1 << 16;
        let a_d = self.stretch_airtime(d);
        let mut until = timers.run_ahead_until().expect("allowed by may_run_ahead");
        let o = 1 - d;
        let mut other = None;
        if self.in_stretch(o) {
            if let Some(t) = timers.next_is(LinkTimer::RadioDone(o as u8)) {
                timers.take_next();
                other = Some((t, self.stretch_airtime(o)));
                until = timers.run_ahead_until().expect("still running ahead");
            }
        }
        let span = other.map_or(a_d, |(_, a_o)| a_o.min(a_d));
        until = until.min(now + span * SPAN);
        if let Some((t, _)) = other {
            until = until.max(t);
        }
        let (n_d, next_d) = self.repeat_idle(d, now + a_d, until, false);
        let Some((t, a_o)) = other else {
            timers.schedule(next_d, LinkTimer::RadioDone(d as u8));
            timers.count_ahead(n_d);
            return;
        };
        let (n_o, next_o) = self.repeat_idle(o, t, until, true);
        let d_first = next_d != next_o || a_d > a_o || (a_d == a_o && t == now);
        let (first, second) = if d_first { ((d, next_d), (o, next_o)) } else { ((o, next_o), (d, next_d)) };
        timers.schedule(first.1, LinkTimer::RadioDone(first.0 as u8));
        timers.schedule(second.1, LinkTimer::RadioDone(second.0 as u8));
        // The other radio's first frame was its own (taken) wake-up.
        timers.count_ahead(n_d + n_o - 1);
    }

    /// Direction `d`'s idle frames of a stretch from `from`, one per airtime,
    /// while they start before `until` (the first one in any case if `first`)
    /// and the sender's idle frames last: (frames, when the radio is next
    /// free). As `transmit` would send them, frame by frame.
    fn repeat_idle(&mut self, d: usize, from: Instant, until: Instant, first: bool) -> (u64, Instant) {
        let airtime = self.stretch_airtime(d);
        let r = &mut self.radio[d];
        let size = r.stretch;
        // Every frame here repeats the frame on the air (a stretch is only kept
        // while the sender has idle frames left).
        let budget = self.arq[d].idle_repeats() as u64;
        let mut start = from;
        let mut n = 0u64;
        let mut silent = self.silent_until;
        while n < budget && ((first && n == 0) || start < until) {
            let lost = r.channel.lose(r.stats.frames_sent, start, airtime, size as u64 * 8, false);
            r.stats.frames_sent += 1;
            r.stats.bytes_sent += size as u64;
            r.stats.busy_ns += airtime.nanos();
            r.stats.idle_frames += 1;
            if lost {
                r.stats.frames_lost += 1;
            } else {
                silent = silent.max(start + airtime + r.delay);
            }
            start += airtime;
            n += 1;
        }
        if n > 0 {
            r.air_end = start;
        }
        r.busy = true;
        self.silent_until = silent;
        self.arq[d].repeat_idle(n as u32);
        if self.arq[d].idle_repeats() == 0 {
            r.stretch = 0;
        }
        (n, start)
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
    pub(super) fn mobile_driven(&mut self, i: usize, e: usize) {
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
    if frame.kind == FrameKind::Data && frame.ctl & crate::link::frame::CTL_POLL != 0 {
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
