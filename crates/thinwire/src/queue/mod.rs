//! Queue disciplines: what waits in front of a transmitter, and what is dropped or
//! marked instead. One trait ([`Qdisc`]), one file per discipline, one registry
//! line each (`queue = { discipline = "codel", … }` in a scenario). The shape
//! follows ns-3's `QueueDisc` (`src/traffic-control/model/`) and Rattan's queues:
//! `enqueue(now, packet)` decides at arrival, `dequeue(now)` takes the time, so a
//! sojourn-time AQM (CoDel) decides when the transmitter asks for the next packet.
//!
//! Disciplines (each module's doc names its source and defaults):
//! - `droptail` — FIFO, an arriving packet that does not fit the limit is dropped
//!   (the seeds' queues; every queue's default);
//! - `red` — Random Early Detection (Floyd & Jacobson 1993, gentle mode, Linux
//!   `sch_red`'s parameters);
//! - `codel` — CoDel (RFC 8289);
//! - `fq_codel` — FQ-CoDel (RFC 8290, Linux `sch_fq_codel`'s defaults);
//! - `pie` — PIE (RFC 8033).
//!
//! With `ecn = true` an AQM marks an ECN-capable packet Congestion Experienced
//! (RFC 3168 §5, [`Packet::mark_ce`]: real bytes and the IPv4 checksum rewritten)
//! where it would have dropped it, and drops it anyway where its source says so.
//!
//! Limits: every discipline has a hard limit (`Limit`, packets or bytes), the
//! position's default unless set (wired 1000 packets, wireless 50 packets, GPRS
//! 120 KB: `build.rs`). A discipline that needs an enqueue time stamps
//! `meta.queued` itself.
//!
//! What drivers see: the arriving packet's [`Verdict`]; packets dropped or marked
//! at any other moment (CoDel at dequeue, FQ-CoDel's drops from the fattest flow)
//! come out of [`Qdisc::poll_event`], so the driver counts and traces every one.
pub mod codel;
pub mod droptail;
pub mod fq_codel;
pub mod pie;
pub mod red;
pub mod wired;

use crate::rng::Rng;
use crate::time::Instant;
use crate::wire::Packet;
use std::collections::VecDeque;

pub use droptail::DropTail;

/// A queue limit in packets or bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u32),
    Bytes(u64),
}

impl Limit {
    /// Whether a packet of `size` bytes fits beside `len` packets of `bytes` bytes.
    #[inline]
    pub fn fits(self, len: usize, bytes: u64, size: u32) -> bool {
        match self {
            Limit::Packets(n) => len < n as usize,
            Limit::Bytes(b) => bytes + size as u64 <= b,
        }
    }
}

/// A queue limit: `"50pkt"` (packets) or a size (`"64KB"`).
impl<'de> serde::Deserialize<'de> for Limit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <String as serde::Deserialize>::deserialize(d)?;
        let bad = || {
            <D::Error as serde::de::Error>::custom(format!(
                "{s:?} is not a queue limit; use \"50pkt\" or a size such as \"64KB\""
            ))
        };
        if let Some(n) = s.trim().strip_suffix("pkt").or_else(|| s.trim().strip_suffix("packets")) {
            return n.trim().parse::<u32>().ok().filter(|&n| n > 0).map(Limit::Packets).ok_or_else(bad);
        }
        crate::units::parse_size(&s).ok().filter(|&b| b > 0).map(Limit::Bytes).ok_or_else(bad)
    }
}

/// What became of a packet offered to a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Accepted as it is.
    Queued,
    /// Accepted, marked Congestion Experienced instead of dropped (RFC 3168).
    Marked,
    /// Not accepted: the packet is gone.
    Dropped(DropReason),
}

/// Why a queue dropped a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The hard limit was reached (a tail drop; FQ-CoDel: a drop from the head
    /// of the fattest flow).
    Overflow,
    /// The AQM's decision (RED's and PIE's early drops, CoDel's at dequeue).
    Aqm,
}

/// A packet dropped or marked other than at its own enqueue.
#[derive(Clone, Debug, PartialEq)]
pub enum QdiscEvent {
    Drop { at: Instant, packet: Packet, reason: DropReason },
    Mark { at: Instant, flow: u16, len: u32 },
}

/// A discipline and its parameters: the keys every discipline shares, resolved,
/// and the discipline's own section as the scenario set it (each discipline
/// reads its own section, in its own file, over its model's defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct QdiscConfig {
    /// Hard limit (packets or bytes).
    pub limit: Limit,
    /// Mark ECN-capable packets instead of dropping them (AQMs only). Default
    /// false, but true for `fq_codel` (Linux's defaults).
    pub ecn: bool,
    /// The rate of the link the queue feeds, bit/s (RED's idle decay; None in
    /// model tests: RED's own default).
    pub rate: Option<u64>,
    /// The discipline and its own keys.
    pub section: QueueCfg,
}

impl QdiscConfig {
    /// A discipline of `kind` with its defaults and `limit`.
    pub fn new(kind: QdiscKind, limit: Limit) -> QdiscConfig {
        QdiscConfig { limit, ecn: kind == QdiscKind::FqCodel, rate: None, section: QueueCfg::default_of(kind) }
    }
    /// The seeds' queue: drop-tail with `limit`.
    pub fn droptail(limit: Limit) -> QdiscConfig {
        QdiscConfig::new(QdiscKind::DropTail, limit)
    }
    /// A queue's discipline from a scenario's section (`None`: drop-tail), with
    /// the position's `default` limit and the link's `rate`.
    pub fn from_section(section: Option<&QueueCfg>, default: Limit, rate: u64) -> QdiscConfig {
        let Some(s) = section else { return QdiscConfig::droptail(default) };
        let mut c = QdiscConfig::new(s.kind(), s.get().limit().unwrap_or(default));
        c.ecn = s.get().ecn().unwrap_or(c.ecn);
        c.rate = Some(rate);
        c.section = s.clone();
        c
    }
    pub fn kind(&self) -> QdiscKind {
        self.section.kind()
    }
}

/// `QueueSection`'s `limit` and `ecn`, from the section's fields of those names
/// (the AQMs' sections).
macro_rules! limit_and_ecn {
    () => {
        fn limit(&self) -> Option<Limit> {
            self.limit
        }
        fn ecn(&self) -> Option<bool> {
            self.ecn
        }
    };
}
pub(crate) use limit_and_ecn;

/// A discipline's scenario section (`queue = { discipline = "NAME", … }`, in
/// the discipline's file): the keys all share, and the checks serde cannot make.
pub trait QueueSection: std::fmt::Debug {
    /// The hard limit, if set.
    fn limit(&self) -> Option<Limit>;
    /// Whether to mark ECN-capable packets, if set (AQMs).
    fn ecn(&self) -> Option<bool> {
        None
    }
    /// Ranges and relations of the discipline's own keys.
    fn check(&self) -> Result<(), crate::schema::FieldError> {
        Ok(())
    }
}

/// What a discipline is made from: its configuration and its own random stream
/// (RED's and PIE's drops, FQ-CoDel's hash perturbation).
pub struct Init {
    pub cfg: QdiscConfig,
    pub rng: Rng,
}

crate::registry! {
    /// A queue discipline, chosen by [`QdiscKind`] (`queue.discipline`).
    trait Qdisc(Init) sections QueueCfg: QueueSection for #[derive(Clone, Debug)] Queue, QdiscKind {
        "droptail" => DropTail(droptail::DropTail),
        "red" => Red(red::Red) [boxed],
        "codel" => Codel(codel::Codel) [boxed],
        "fq_codel" => FqCodel(fq_codel::FqCodel) [boxed],
        "pie" => Pie(pie::Pie) [boxed],
    }
    /// Offers a packet at `now`.
    fn enqueue(&mut self, now: Instant, p: Packet) -> Verdict;
    /// The packet to send now, if any (the transmitter is free at `now`).
    fn dequeue(&mut self, now: Instant) -> Option<Packet>;
    /// A packet dropped or marked other than at its own enqueue, oldest first.
    fn poll_event(&mut self) -> Option<QdiscEvent>;
    /// The queue is empty and the transmitter free at `now`: offers `p` and
    /// takes the next packet at once — what `enqueue` then `dequeue` would do
    /// (Linux's qdisc bypass, `TCQ_F_CAN_BYPASS`, for drop-tail: the packet
    /// never enters the FIFO).
    fn pass(&mut self, now: Instant, p: Packet) -> (Verdict, Option<Packet>);
    ref {
        /// Packets queued.
        fn len(&self) -> usize;
        /// Bytes queued (IP packets' sizes).
        fn bytes(&self) -> u64;
        /// Whether every decision is made at enqueue and packets leave in the
        /// order they came: a transmitter of known rate can then compute each
        /// accepted packet's departure when it arrives (the wired link does).
        fn decides_at_enqueue(&self) -> bool;
    }
}

impl Queue {
    /// A discipline from its configuration and random stream.
    pub fn new(cfg: QdiscConfig, rng: Rng) -> Queue {
        let kind = cfg.kind();
        kind.make(&Init { cfg, rng })
    }
    /// A drop-tail queue (no random stream needed).
    pub fn droptail(limit: Limit) -> Queue {
        Queue::DropTail(DropTail::with_limit(limit))
    }
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        match self {
            Queue::DropTail(q) => q.len() == 0,
            q => q.len_other() == 0,
        }
    }
    /// Packets queued ([`Qdisc::len`], drop-tail's inline).
    #[inline(always)]
    pub fn len(&self) -> usize {
        match self {
            Queue::DropTail(q) => q.len(),
            q => q.len_other(),
        }
    }
    #[inline(never)]
    fn len_other(&self) -> usize {
        Qdisc::len(self)
    }
    /// Whether the discipline can drop or mark after queueing (all but drop-tail).
    #[inline]
    pub fn has_events(&self) -> bool {
        !matches!(self, Queue::DropTail(_))
    }
    /// [`Qdisc::enqueue`] with drop-tail's path inline and the others' out of
    /// line: the hot paths of the links pay for drop-tail what they paid before
    /// the trait (measured in bench/RESULTS.md).
    #[inline(always)]
    pub fn put(&mut self, now: Instant, p: Packet) -> Verdict {
        match self {
            Queue::DropTail(q) => q.enqueue(now, p),
            q => q.enqueue_other(now, p),
        }
    }
    /// [`Qdisc::dequeue`], the same way.
    #[inline(always)]
    pub fn take(&mut self, now: Instant) -> Option<Packet> {
        match self {
            Queue::DropTail(q) => q.dequeue(now),
            q => q.dequeue_other(now),
        }
    }
    #[inline(never)]
    fn enqueue_other(&mut self, now: Instant, p: Packet) -> Verdict {
        Qdisc::enqueue(self, now, p)
    }
    #[inline(never)]
    fn dequeue_other(&mut self, now: Instant) -> Option<Packet> {
        Qdisc::dequeue(self, now)
    }
}

/// A FIFO of packets with its byte count: the storage of the single-queue
/// disciplines and of each FQ-CoDel flow.
#[derive(Clone, Debug, Default)]
pub struct Fifo {
    q: VecDeque<Packet>,
    bytes: u64,
}

impl Fifo {
    #[inline]
    pub fn push(&mut self, p: Packet) {
        self.bytes += p.size() as u64;
        self.q.push_back(p);
    }
    /// [`push`](Self::push), the packet stamped with its enqueue time in its
    /// place in the queue: stamped before, the copy into the queue read the
    /// stamp's fresh store back with wide loads, a stalled store forward
    /// (bench/RESULTS.md, 2026-11-29 fifth session).
    #[inline]
    pub fn push_stamped(&mut self, p: Packet, now: Instant) {
        self.push(p);
        if let Some(b) = self.q.back_mut() {
            b.meta.queued = now;
        }
    }
    #[inline]
    pub fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop_front()?;
        self.bytes -= p.size() as u64;
        Some(p)
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.q.len()
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn front(&self) -> Option<&Packet> {
        self.q.front()
    }
}

/// The queries of a discipline that keeps its packets in `self.fifo`.
macro_rules! fifo_queries {
    () => {
        fn len(&self) -> usize {
            self.fifo.len()
        }
        fn bytes(&self) -> u64 {
            self.fifo.bytes()
        }
    };
}
pub(crate) use fifo_queries;

/// An AQM's `pass` (enqueue then dequeue) and `poll_event` (from `events`, or
/// none), out of line so that drop-tail's path stays small.
macro_rules! aqm_common {
    (events) => {
        #[inline(never)]
        fn pass(&mut self, now: Instant, p: Packet) -> (Verdict, Option<Packet>) {
            super::enqueue_then_dequeue(self, now, p)
        }
        #[inline(never)]
        fn poll_event(&mut self) -> Option<QdiscEvent> {
            self.events.pop_front()
        }
    };
    () => {
        #[inline(never)]
        fn pass(&mut self, now: Instant, p: Packet) -> (Verdict, Option<Packet>) {
            super::enqueue_then_dequeue(self, now, p)
        }
        #[inline(never)]
        fn poll_event(&mut self) -> Option<QdiscEvent> {
            None
        }
    };
}
pub(crate) use aqm_common;

/// [`Qdisc::pass`] as enqueue then dequeue (every discipline but drop-tail).
#[inline]
pub(crate) fn enqueue_then_dequeue(q: &mut impl Qdisc, now: Instant, p: Packet) -> (Verdict, Option<Packet>) {
    let v = q.enqueue(now, p);
    (v, q.dequeue(now))
}

/// An AQM's congestion signal for `p`: marked (true) when ECN is on and the
/// packet is ECN-capable, else to be dropped (false).
#[inline]
pub(crate) fn try_mark(ecn: bool, p: &mut Packet) -> bool {
    ecn && p.mark_ce()
}

#[cfg(test)]
pub(crate) mod testutil {
    use crate::time::{Duration, Instant};
    use crate::wire::{ip, Packet, UdpRepr, L4};

    /// A UDP packet of `n` payload bytes in flow `flow`, ECN-capable when `ect`.
    pub fn pkt(flow: u16, n: u32, ect: bool) -> Packet {
        let l4 = L4::Udp(UdpRepr { src_port: 1000 + flow, dst_port: 2 });
        let mut p = Packet::new([1; 4], [2; 4], 0, l4, n, flow, Instant::ZERO);
        if ect {
            p.ip.set_ecn(ip::ECT0);
        }
        p
    }
    pub fn ms(x: f64) -> Instant {
        Instant::ZERO + Duration::from_secs_f64(x / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::pkt;
    use super::*;
    use crate::time::Instant;

    #[test]
    fn every_discipline_is_a_fifo_when_nothing_is_congested() {
        for &k in QdiscKind::ALL {
            let mut q = Queue::new(QdiscConfig::new(k, Limit::Packets(100)), Rng::stream(1, 0, "q"));
            for i in 0..5 {
                assert_eq!(q.enqueue(Instant::ZERO, pkt(0, 100 + i, false)), Verdict::Queued, "{k:?}");
            }
            assert_eq!((q.len(), q.bytes()), (5, 5 * 128 + 10), "{k:?}");
            for i in 0..5 {
                assert_eq!(q.dequeue(Instant::ZERO).map(|p| p.payload_len), Some(100 + i), "{k:?}");
            }
            assert!(q.dequeue(Instant::ZERO).is_none() && q.is_empty() && q.poll_event().is_none(), "{k:?}");
        }
    }

    #[test]
    fn every_discipline_keeps_its_hard_limit() {
        for &k in QdiscKind::ALL {
            let mut q = Queue::new(QdiscConfig::new(k, Limit::Packets(3)), Rng::stream(1, 0, "q"));
            let mut dropped = 0;
            for _ in 0..10 {
                if let Verdict::Dropped(r) = q.enqueue(Instant::ZERO, pkt(0, 100, false)) {
                    assert_eq!(r, DropReason::Overflow, "{k:?}");
                    dropped += 1;
                }
            }
            while let Some(QdiscEvent::Drop { reason, .. }) = q.poll_event() {
                assert_eq!(reason, DropReason::Overflow, "{k:?}");
                dropped += 1;
            }
            assert_eq!(q.len() + dropped, 10, "{k:?}");
            // FQ-CoDel drops half the fattest flow at once (Linux fq_codel_drop).
            let want = if k == QdiscKind::FqCodel { 2 } else { 3 };
            assert_eq!(q.len(), want, "{k:?}");
        }
    }

    #[test]
    fn names_parse_back() {
        for &k in QdiscKind::ALL {
            assert_eq!(QdiscKind::parse(k.name()), Some(k));
        }
        assert_eq!(QdiscKind::NAMES, ["droptail", "red", "codel", "fq_codel", "pie"]);
    }
}
