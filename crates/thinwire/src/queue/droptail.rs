//! Drop-tail: a FIFO limited in packets or bytes; an arriving packet that does
//! not fit is dropped. The seeds' queues (BSD's `ifqueue`, ns-2's `DropTail`)
//! and every queue's default discipline. Default limit (scenario, `build.rs`):
//! wired 1000 packets, wireless 50 packets per session (the BSD interface
//! default), GPRS 120 KB (seed 003 §IV-B).
use super::{DropReason, Fifo, Init, Limit, Qdisc, QdiscEvent, Verdict};
use crate::time::Instant;
use crate::wire::Packet;

/// `discipline = "droptail"` (or none): `limit`.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DropTailCfg {
    pub limit: Option<Limit>,
}

impl crate::schema::Configured for DropTail {
    type Section = DropTailCfg;
}

impl super::QueueSection for DropTailCfg {
    fn limit(&self) -> Option<Limit> {
        self.limit
    }
}

#[derive(Clone, Debug)]
pub struct DropTail {
    fifo: Fifo,
    limit: Limit,
}

impl DropTail {
    pub fn new(i: &Init) -> DropTail {
        DropTail::with_limit(i.cfg.limit)
    }
    pub fn with_limit(limit: Limit) -> DropTail {
        DropTail { fifo: Fifo::default(), limit }
    }
    pub fn limit(&self) -> Limit {
        self.limit
    }
}

impl Qdisc for DropTail {
    #[inline(always)]
    fn enqueue(&mut self, now: Instant, p: Packet) -> Verdict {
        if !self.limit.fits(self.fifo.len(), self.fifo.bytes(), p.size()) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        self.fifo.push_stamped(p, now);
        Verdict::Queued
    }
    #[inline(always)]
    fn dequeue(&mut self, _: Instant) -> Option<Packet> {
        self.fifo.pop()
    }
    #[inline]
    fn pass(&mut self, _: Instant, p: Packet) -> (Verdict, Option<Packet>) {
        debug_assert!(self.fifo.is_empty());
        if !self.limit.fits(0, 0, p.size()) {
            return (Verdict::Dropped(DropReason::Overflow), None);
        }
        (Verdict::Queued, Some(p))
    }
    #[inline]
    fn poll_event(&mut self) -> Option<QdiscEvent> {
        None
    }
    #[inline]
    fn len(&self) -> usize {
        self.fifo.len()
    }
    #[inline]
    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn decides_at_enqueue(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::pkt;
    #[test]
    fn packet_limit() {
        let mut q = DropTail::with_limit(Limit::Packets(2));
        let t = Instant::ZERO;
        assert_eq!(q.enqueue(t, pkt(0, 10, false)), Verdict::Queued);
        assert_eq!(q.enqueue(t, pkt(0, 10, false)), Verdict::Queued);
        assert_eq!(q.enqueue(t, pkt(0, 10, false)), Verdict::Dropped(DropReason::Overflow));
        q.dequeue(t);
        assert_eq!(q.enqueue(t, pkt(0, 10, false)), Verdict::Queued);
    }
    #[test]
    fn byte_limit() {
        let mut q = DropTail::with_limit(Limit::Bytes(100));
        let t = Instant::ZERO;
        assert_eq!(q.enqueue(t, pkt(0, 50 - 28, false)), Verdict::Queued);
        assert!(matches!(q.enqueue(t, pkt(0, 51 - 28, false)), Verdict::Dropped(_)));
        assert_eq!(q.enqueue(t, pkt(0, 50 - 28, false)), Verdict::Queued);
    }
}
