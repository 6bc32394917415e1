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
use super::codel::{check_keys, CodelConfig, CodelVars, Source};
use super::{DropReason, Fifo, Init, Limit, Qdisc, QdiscEvent, QueueCfg, QueueSection, Verdict};
use crate::fx::Fx;
use crate::schema::{bytes, count, Configured, FieldError};
use crate::time::Instant;
use crate::units::{Dur, Size};
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

/// `discipline = "fq_codel"`: CoDel's keys and the scheduler's.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FqCodelCfg {
    pub limit: Option<Limit>,
    pub ecn: Option<bool>,
    pub target: Option<Dur>,
    pub interval: Option<Dur>,
    pub mtu: Option<Size>,
    pub flows: Option<u32>,
    pub quantum: Option<Size>,
    pub drop_batch: Option<u32>,
}

impl Configured for FqCodel {
    type Section = FqCodelCfg;
}

impl QueueSection for FqCodelCfg {
    super::limit_and_ecn!();
    fn check(&self) -> Result<(), FieldError> {
        check_keys(self.target, self.interval, self.mtu)?;
        count("flows", self.flows, 1, 65536)?;
        bytes("quantum", self.quantum, 64, 1 << 20)?;
        count("drop_batch", self.drop_batch, 1, 1_000_000)
    }
}

impl FqCodelCfg {
    /// The scheduler's configuration: the defaults with what the section sets.
    pub fn fq(&self) -> FqConfig {
        let d = FqConfig::default();
        FqConfig {
            flows: self.flows.unwrap_or(d.flows),
            quantum: self.quantum.map_or(d.quantum, |s| s.0 as u32),
            drop_batch: self.drop_batch.unwrap_or(d.drop_batch),
        }
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
        let QueueCfg::FqCodel(s) = &i.cfg.section else {
            unreachable!("FQ-CoDel made from another discipline's section")
        };
        let fq = s.fq();
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
            codel: CodelConfig::with_keys(s.target, s.interval, s.mtu),
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
    // Out of line: the enum dispatch stays small enough to inline, so
    // drop-tail's path costs what it did before the trait.
    #[inline(never)]
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

    #[inline(never)]
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
    super::aqm_common!(events);
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

#[cfg(test)]
mod tests {
    use super::FqCodelCfg;
    use crate::queue::testutil::{ms, pkt};
    use crate::queue::{Limit, Qdisc, QdiscConfig, QdiscKind, Queue, QueueCfg};
    use crate::rng::Rng;
    use crate::time::Duration;
    use crate::units::Dur;

    /// RFC 8290 §1: a sparse flow beside a saturating one. The bulk flow offers
    /// twice the link's rate in 1500-byte packets; a ping-like flow sends 100
    /// bytes every 50 ms. Under FQ-CoDel the sparse packets go out next (a new
    /// flow) and wait about one packet time; under plain CoDel they wait behind
    /// the standing queue CoDel allows (its target and more).
    #[test]
    fn a_sparse_flow_is_isolated_from_a_saturating_one() {
        let sojourns = |kind: QdiscKind| {
            let mut q = Queue::new(QdiscConfig::new(kind, Limit::Packets(1000)), Rng::stream(1, 0, "q"));
            let tx = 1.2; // ms per 1500 bytes (10 Mbit/s)
            let (mut t, mut next_tx, mut next_sparse, mut next_bulk) = (0.0f64, 0.0f64, 10.0f64, 0.0f64);
            let mut waits = vec![];
            while t < 20_000.0 {
                t = next_tx.min(next_sparse).min(next_bulk);
                if t == next_bulk {
                    q.enqueue(ms(t), pkt(0, 1472, false));
                    next_bulk += tx / 2.0;
                } else if t == next_sparse {
                    q.enqueue(ms(t), pkt(1, 72, false));
                    next_sparse += 50.0;
                } else {
                    next_tx += match q.dequeue(ms(t)) {
                        Some(p) => {
                            if p.meta.flow == 1 {
                                waits.push((ms(t) - p.meta.queued).as_secs_f64() * 1e3);
                            }
                            p.size() as f64 * 8.0 / 10_000.0
                        }
                        None => 0.01,
                    };
                    while q.poll_event().is_some() {}
                }
            }
            waits.sort_by(|a, b| a.partial_cmp(b).unwrap());
            waits[waits.len() * 9 / 10]
        };
        let fq = sojourns(QdiscKind::FqCodel);
        let codel = sojourns(QdiscKind::Codel);
        assert!(fq <= 1.3, "FQ-CoDel: the sparse flow's p90 wait {fq} ms, about one packet time (1.2 ms)");
        assert!(codel > 4.0, "plain CoDel: {codel} ms behind the standing queue");
        let _ = Duration::ZERO;
    }

    /// The deficit round robin shares the link by bytes: two saturating flows
    /// of 1500- and 500-byte packets each get half the bytes.
    #[test]
    fn two_saturating_flows_share_by_bytes() {
        let mut cfg = QdiscConfig::new(QdiscKind::FqCodel, Limit::Packets(10_000));
        // No AQM: scheduling only.
        cfg.section =
            QueueCfg::FqCodel(FqCodelCfg { target: Some(Dur(Duration::from_secs(100))), ..Default::default() });
        let mut q = Queue::new(cfg, Rng::stream(1, 0, "q"));
        for i in 0..3000 {
            q.enqueue(ms(i as f64 * 0.001), pkt(0, 1472, false));
            q.enqueue(ms(i as f64 * 0.001), pkt(1, 472, false));
            q.enqueue(ms(i as f64 * 0.001), pkt(1, 472, false));
            q.enqueue(ms(i as f64 * 0.001), pkt(1, 472, false));
        }
        let mut bytes = [0u64; 2];
        for _ in 0..3000 {
            let p = q.dequeue(ms(10.0)).unwrap();
            bytes[p.meta.flow as usize] += p.size() as u64;
        }
        let share = bytes[0] as f64 / (bytes[0] + bytes[1]) as f64;
        assert!((share - 0.5).abs() < 0.02, "{bytes:?}");
    }
}
