//! The radio itself: starting a frame when the radio is free (its airtime at the
//! constant rate or at a Mahimahi trace's opportunities), the channel's verdict on
//! it, its arrival one propagation delay after its airtime with FIFO order kept,
//! and the ARQ machines' timers rescheduled after each step.
use super::*;

impl WirelessLink {
    /// Starts the next frame of direction `d` if the radio is free; reschedules the
    /// sending end's ARQ timer either way.
    pub(super) fn kick(&mut self, now: Instant, d: usize, timers: &mut impl Timers<LinkTimer>) {
        let shared = self.radio[d].shared.is_some();
        if self.radio[d].busy {
            // A packet offered, a frame received or a timer: the sender may
            // have something other than its idle frame now.
            if self.radio[d].stretch.is_some() && !self.stretch_holds(d) {
                self.radio[d].stretch = None;
            }
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
        let repeats = frame.kind == FrameKind::Idle && self.may_stretch(d, &frame);
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
        r.stretch = repeats.then_some((size, airtime));
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

    /// Whether direction `d`'s next frame would repeat the idle frame it last
    /// sent: its sender says so (nothing to NAK, retransmit or send since, and
    /// idle frames left), and both IP queues and the bypass session are empty.
    /// The far end keeps ignoring the frame (its V(R) never decreases, and the
    /// V(S) the frame carries changes only when data is sent).
    fn stretch_holds(&self, d: usize) -> bool {
        let r = &self.radio[d];
        self.arq[d].idle_repeats() > 0 && r.qs[0].is_empty() && r.qs[1].is_empty() && self.bypass[d].wants_packet()
    }

    /// Whether direction `d`'s radio is in an idle stretch (`may_stretch`): its
    /// next frame would repeat the idle frame on the air, as far as the packets
    /// offered, frames received and timers since have changed (each such step
    /// looks again, `stretch_holds`).
    pub fn in_stretch(&self, d: usize) -> bool {
        self.radio[d].stretch.is_some()
    }

    /// Runs idle stretches in one step, for a driver that knows when its next
    /// event other than these radios' is (the simulator): direction `d`'s radio
    /// is free at `now` and [`in_stretch`](Self::in_stretch); with `other =
    /// Some(t)`, so is the other direction's at `t` (`now <= t <= until`).
    /// Each sends the idle frames its wake-ups would have sent, one per airtime,
    /// the first at its own time and the others starting before `until` (the
    /// next other event, or just after the run's last instant) — nothing else
    /// happens before then, and the two directions' frames touch nothing in
    /// common — and asks to be woken when its radio is next free, as the last
    /// frame would have. A stretch covers at most 65,536 airtimes from `now`
    /// (a driver stays responsive). Returns the frames sent: each stands for one
    /// of the wake-ups it replaces.
    ///
    /// The wake-ups keep the order they would have had: those now scheduled
    /// come after every event already scheduled, as they would have, having
    /// been asked for by the last frame, after those were scheduled. When the
    /// two radios are next free at the same instant, the one whose last frame
    /// started first (the longer airtime) is woken first; with equal airtimes,
    /// the one woken first at the first instant both were woken at: `d` if
    /// `t == now`, else the other (its wake-up at `t` was asked for before
    /// `d`'s frame at `now` was sent, or at that instant `d` was not yet in its
    /// stretch and its own wake-up came later).
    pub fn idle_stretch(
        &mut self,
        now: Instant,
        d: usize,
        other: Option<Instant>,
        until: Instant,
        timers: &mut impl Timers<LinkTimer>,
    ) -> u64 {
        const SPAN: i64 = 1 << 16;
        let o = 1 - d;
        let air = |r: &Radio| r.stretch.expect("in an idle stretch").1;
        let a_d = air(&self.radio[d]);
        let a_o = other.map(|_| air(&self.radio[o]));
        let span = a_o.map_or(a_d, |a| a.min(a_d));
        let mut until = until.min(now + span * SPAN);
        if let Some(t) = other {
            until = until.max(t);
        }
        let (n_d, next_d) = self.repeat_idle(d, now, until);
        let Some(t) = other else {
            timers.schedule(next_d, LinkTimer::RadioDone(d as u8));
            return n_d;
        };
        let (n_o, next_o) = self.repeat_idle(o, t, until);
        let a_o = a_o.expect("the other radio's airtime");
        let d_first = next_d != next_o || a_d > a_o || (a_d == a_o && t == now);
        let (first, second) = if d_first { ((d, next_d), (o, next_o)) } else { ((o, next_o), (d, next_d)) };
        timers.schedule(first.1, LinkTimer::RadioDone(first.0 as u8));
        timers.schedule(second.1, LinkTimer::RadioDone(second.0 as u8));
        n_d + n_o
    }

    /// Direction `d`'s idle frames of a stretch, the first at `from`, the others
    /// while they start before `until` and the sender's budget lasts: (frames,
    /// when the radio is next free). As `transmit` would, frame by frame.
    fn repeat_idle(&mut self, d: usize, from: Instant, until: Instant) -> (u64, Instant) {
        let r = &mut self.radio[d];
        let (size, airtime) = r.stretch.expect("in an idle stretch");
        // Every frame here, the one at `from` too, repeats the frame that
        // started the stretch (a stretch is only kept while the budget is not 0).
        let budget = self.arq[d].idle_repeats() as u64;
        let mut start = from;
        let mut n = 0u64;
        let mut silent = self.silent_until;
        while n < budget && (n == 0 || start < until) {
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
        r.air_end = start;
        r.busy = true;
        self.silent_until = silent;
        self.arq[d].repeat_idle(n as u32);
        if self.arq[d].idle_repeats() == 0 {
            r.stretch = None;
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
