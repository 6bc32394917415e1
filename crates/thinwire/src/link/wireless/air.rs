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
