//! Which session's frame goes on air next (the parent module's "Multiplexing"):
//! the pull multiplexer asks the sessions in scheduler order (round robin, or
//! strict priority for ARQ or bypass, seed 002 §III), feeding each ARQ machine
//! from its IP queue as it has room; the shared frame queue (ns-2's structure) is
//! filled with every frame the sessions can give.
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
