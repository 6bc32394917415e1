//! FQ-CoDel (RFC 8290, as Linux `sch_fq_codel` runs it): packets are hashed by
//! their 5-tuple into `flows` queues, each managed by its own CoDel state
//! (`codel.rs`); a deficit round robin with `quantum` bytes serves first the
//! flows that just became active (the new list), then the others (the old
//! list), so a sparse flow's packets go out ahead of a saturating flow's queue.
//!
//! - Enqueue (RFC 8290 §4.1): stamp, append to the flow's queue; a flow not on
//!   either list joins the new list's tail with a deficit of one quantum. When
//!   the total exceeds `limit`, packets are dropped from the head of the flow
//!   with the most bytes, up to `drop_batch` packets or half of its bytes
//!   (Linux `fq_codel_drop`; the arriving packet is kept unless its own flow was
//!   that one and it reached the head).
//! - Dequeue (§4.2): take the first flow of the new list, else of the old list;
//!   a flow whose deficit is spent gets another quantum and moves to the old
//!   list's tail; otherwise CoDel dequeues from it. A flow that turns out empty
//!   moves from the new list to the old list's tail when that list is non-empty
//!   (so a flow cannot stay "new" by emptying itself each round), and leaves the
//!   lists otherwise.
//!
//! Parameters and defaults (Linux's): `flows` 1024, `quantum` 1514 B (an
//! Ethernet MTU with its header), `drop_batch` 64, CoDel's `target` 5 ms and
//! `interval` 100 ms, `limit` the position's default (Linux: 10,240 packets),
//! `ecn` **on** (Linux's default for fq_codel). CoDel's "more than one MTU
//! queued" test looks at the whole queue's bytes, as Linux passes its
//! `qstats.backlog`. The hash is Fx over (source, destination, protocol, ports),
//! perturbed by a value drawn from the queue's random stream (Linux: jhash with
//! a random perturbation), so which flows collide is fixed by the seed.
use super::codel::{CodelVars, Source};
use super::{DropReason, Fifo, Init, Limit, Qdisc, QdiscEvent, Verdict};
use crate::fx::Fx;
use crate::time::Instant;
use crate::wire::{Packet, L4};
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};

#[derive(Clone, Debug, PartialEq)]
pub struct FqConfig {
    /// Flow queues (hash buckets), 1 to 65536 (default 1024).
    pub flows: u32,
    /// Bytes a flow may send per round (default 1514).
    pub quantum: u32,
    /// Most packets dropped at once at the limit (default 64).
    pub drop_batch: u32,
}

impl Default for FqConfig {
    fn default() -> Self {
        FqConfig { flows: 1024, quantum: 1514, drop_batch: 64 }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Clone, Debug)]
struct Flow {
    q: Fifo,
    deficit: i64,
    vars: CodelVars,
    list: List,
}

#[derive(Clone, Debug)]
pub struct FqCodel {
    flows: Vec<Flow>,
    new_flows: VecDeque<u32>,
    old_flows: VecDeque<u32>,
    len: usize,
    bytes: u64,
    perturb: u64,
    limit: Limit,
    ecn: bool,
    codel: super::codel::CodelConfig,
    fq: FqConfig,
    events: VecDeque<QdiscEvent>,
}

/// One flow's queue as CoDel sees it: popping keeps the totals, the backlog is
/// the whole queue's.
struct FlowSource<'a> {
    q: &'a mut Fifo,
    len: &'a mut usize,
    bytes: &'a mut u64,
}

impl Source for FlowSource<'_> {
    fn pop(&mut self) -> Option<Packet> {
        let p = self.q.pop()?;
        *self.len -= 1;
        *self.bytes -= p.size() as u64;
        Some(p)
    }
    fn backlog(&self) -> u64 {
        *self.bytes
    }
}

impl FqCodel {
    pub fn new(i: &Init) -> FqCodel {
        let fq = i.cfg.fq.clone();
        let flow = Flow { q: Fifo::default(), deficit: 0, vars: CodelVars::default(), list: List::None };
        FqCodel {
            flows: vec![flow; fq.flows.max(1) as usize],
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            len: 0,
            bytes: 0,
            perturb: i.rng.clone().next_u64(),
            limit: i.cfg.limit,
            ecn: i.cfg.ecn,
            codel: i.cfg.codel.clone(),
            fq,
            events: VecDeque::new(),
        }
    }

    /// The flow queue of `p`: its 5-tuple hashed, scaled to `flows`.
    fn classify(&self, p: &Packet) -> usize {
        let mut h = Fx::default();
        h.write_u64(self.perturb);
        p.ip.src().hash(&mut h);
        p.ip.dst().hash(&mut h);
        let (sp, dp) = match &p.l4 {
            L4::Tcp(t) => (t.src_port, t.dst_port),
            L4::Udp(u) => (u.src_port, u.dst_port),
            L4::Other(_) => (0, 0),
        };
        h.write_u64(((p.ip.protocol() as u64) << 32) | ((sp as u64) << 16) | dp as u64);
        (((h.finish() >> 32) * self.flows.len() as u64) >> 32) as usize
    }

    fn over_limit(&self) -> bool {
        match self.limit {
            Limit::Packets(n) => self.len > n as usize,
            Limit::Bytes(b) => self.bytes > b,
        }
    }

    /// Linux `fq_codel_drop`: from the head of the flow holding the most bytes,
    /// up to `drop_batch` packets or half its bytes.
    fn drop_from_fattest(&mut self, now: Instant) {
        let Some(fat) = (0..self.flows.len()).max_by_key(|&i| (self.flows[i].q.bytes(), std::cmp::Reverse(i))) else {
            return;
        };
        let threshold = self.flows[fat].q.bytes() / 2;
        let mut dropped = 0u64;
        for _ in 0..self.fq.drop_batch.max(1) {
            let Some(p) = self.flows[fat].q.pop() else { break };
            self.len -= 1;
            self.bytes -= p.size() as u64;
            dropped += p.size() as u64;
            self.events.push_back(QdiscEvent::Drop { at: now, packet: p, reason: DropReason::Overflow });
            if dropped >= threshold {
                break;
            }
        }
    }

    fn list_mut(&mut self, l: List) -> &mut VecDeque<u32> {
        match l {
            List::New => &mut self.new_flows,
            _ => &mut self.old_flows,
        }
    }
}

impl Qdisc for FqCodel {
    fn enqueue(&mut self, now: Instant, mut p: Packet) -> Verdict {
        let idx = self.classify(&p);
        p.meta.queued = now;
        self.len += 1;
        self.bytes += p.size() as u64;
        let quantum = self.fq.quantum as i64;
        let f = &mut self.flows[idx];
        f.q.push(p);
        if f.list == List::None {
            f.list = List::New;
            f.deficit = quantum;
            self.new_flows.push_back(idx as u32);
        }
        if self.over_limit() {
            self.drop_from_fattest(now);
        }
        Verdict::Queued
    }

    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        loop {
            let (idx, list) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i as usize, List::New),
                (None, Some(&i)) => (i as usize, List::Old),
                (None, None) => return None,
            };
            if self.flows[idx].deficit <= 0 {
                self.flows[idx].deficit += self.fq.quantum as i64;
                self.list_mut(list).pop_front();
                self.old_flows.push_back(idx as u32);
                self.flows[idx].list = List::Old;
                continue;
            }
            let f = &mut self.flows[idx];
            let mut src = FlowSource { q: &mut f.q, len: &mut self.len, bytes: &mut self.bytes };
            let p = f.vars.dequeue(&self.codel, self.ecn, now, &mut src, &mut self.events);
            match p {
                Some(p) => {
                    f.deficit -= p.size() as i64;
                    return Some(p);
                }
                None => {
                    self.list_mut(list).pop_front();
                    if list == List::New && !self.old_flows.is_empty() {
                        self.old_flows.push_back(idx as u32);
                        self.flows[idx].list = List::Old;
                    } else {
                        self.flows[idx].list = List::None;
                    }
                }
            }
        }
    }
    fn poll_event(&mut self) -> Option<QdiscEvent> {
        self.events.pop_front()
    }
    fn len(&self) -> usize {
        self.len
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn decides_at_enqueue(&self) -> bool {
        false
    }
}
