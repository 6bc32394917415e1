//! The wireless link's radio side: which session sends next (the multiplexer),
//! putting a frame on the air (airtime, the channel's decision, propagation) and
//! its arrival at the far end.
use super::*;

impl WirelessLink {
    /// Takes the next frame from the sessions of direction `d` in scheduler order;
    /// for the shared frame queue (`queued`), no idle frame.
    ///
    /// Called several times per event and mostly finding nothing, so it is kept
    /// small: handing queued packets to a session (fragmenting, allocating) is
    /// outlined (inlined, it gave every call a 776-byte stack frame to set up:
    /// bench/RESULTS.md, 2026-11-24 (late)).
    pub(super) fn next_frame(&mut self, d: usize, now: Instant, queued: bool) -> Option<Frame> {
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
    pub(super) fn next_frame_cell(&mut self, d: usize, now: Instant, queued: bool) -> Option<Frame> {
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
    pub(super) fn poll_session(&mut self, d: usize, s: usize, now: Instant, queued: bool) -> Option<Frame> {
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
    pub(super) fn poll_mobile(&mut self, d: usize, s: usize, now: Instant, queued: bool) -> Option<Frame> {
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

    /// Starts the next frame of direction `d` if the radio is free; reschedules the
    /// sending end's ARQ timer either way.
    pub(super) fn kick(&mut self, now: Instant, d: usize, timers: &mut impl Timers<LinkTimer>) {
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

    pub(super) fn transmit(&mut self, now: Instant, d: usize, frame: Frame, timers: &mut impl Timers<LinkTimer>) {
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
}

/// The RLC rows of a frame just sent in direction `d` (link trace): a poll with
/// the sender's window, or what a STATUS PDU reports.
pub(super) fn rlc_rows(events: &mut VecDeque<LinkEvent>, arq: &Arq, now: Instant, d: usize, frame: &Frame) {
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
