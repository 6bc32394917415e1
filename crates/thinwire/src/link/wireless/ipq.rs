//! The IP queues in front of the link layer: an offered packet meets its
//! session's queue discipline (drop-tail on the fast path, any `Qdisc` otherwise;
//! `queue/`), and the radio takes packets from it; verdicts, drops and marks at
//! dequeue and sojourn times are counted and traced (RFC 3168 §5 for marks; the
//! disciplines name their own sources).
use super::*;

impl WirelessLink {
    pub(super) fn push(&mut self, now: Instant, dir: usize, session: Session, p: Packet) -> Offer {
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
        // Drop-tail: the path the link had before queue disciplines (it stamps
        // the packet's enqueue time).
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
    fn push_aqm(&mut self, now: Instant, dir: usize, sess: usize, mut p: Packet) -> Offer {
        p.meta.queued = now; // the sojourn's start, for disciplines that do not stamp (RED)
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
}
