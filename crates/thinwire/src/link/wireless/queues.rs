//! The wireless link's IP queues: packets offered to a session's queue (and its
//! discipline's decisions), and the queues feeding the ARQ and bypass machines
//! and the shared frame queue.
use super::*;

impl WirelessLink {
    pub(super) fn push(&mut self, now: Instant, dir: usize, session: Session, mut p: Packet) -> Offer {
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
    pub(super) fn pushed(
        &mut self,
        now: Instant,
        dir: usize,
        flow: u16,
        len: u32,
        qlen: usize,
        verdict: Verdict,
    ) -> Offer {
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
    pub(super) fn push_aqm(&mut self, now: Instant, dir: usize, sess: usize, p: Packet) -> Offer {
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
    pub(super) fn queue_events(&mut self, now: Instant, dir: usize, sess: usize) {
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
    pub(super) fn dequeue(&mut self, d: usize, sess: usize, now: Instant) -> Option<Packet> {
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

    /// Hands direction `d`'s queued packets to its ARQ session while it wants them.
    #[inline(never)]
    pub(super) fn feed_arq(&mut self, d: usize, now: Instant) {
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
    pub(super) fn feed_bypass(&mut self, d: usize, now: Instant) {
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
    pub(super) fn fill_shared(&mut self, d: usize, now: Instant) {
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
}
