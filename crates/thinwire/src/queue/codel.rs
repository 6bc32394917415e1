//! CoDel, Controlled Delay (RFC 8289 §5's pseudo-code, with Linux `codel_impl.h`'s
//! ECN marking): packets are stamped at enqueue; at dequeue, once the sojourn
//! time of the packets leaving has stayed at or above `target` for `interval`
//! (and more than one MTU is queued), CoDel enters its dropping state and drops
//! (or marks) at intervals shrinking as `interval / sqrt(count)`, until a
//! packet leaves below `target`. On re-entry soon after leaving (within 16
//! intervals) `count` resumes from the previous cycle's rate.
//!
//! Parameters and defaults (RFC 8289 §4.2–4.4, Linux `sch_codel`): `target`
//! 5 ms, `interval` 100 ms, `mtu` 1500 B (the `maxpacket` below which a queue is
//! never judged standing), `limit` the position's default (Linux: 1000
//! packets), `ecn` off (Linux's default): with it an ECN-capable packet is
//! marked CE where it would be dropped, and the dropping state then ends that
//! dequeue (`codel_dequeue`'s `goto end`). Overflow is a tail drop.
//!
//! Choices where the sources differ: the control law's division is exact
//! (`sqrt`, truncated to whole nanoseconds) where Linux uses a Newton step of
//! `1/sqrt(count)`; `now - drop_next` is signed, as Linux compares times (the
//! RFC's unsigned `time_t` would wrap when `drop_next` lies ahead). On slow
//! links RFC 8289 §4.3 advises a target of at least one MTU's transmission
//! time: 5 ms is 0.07 of a 1500-byte packet at 9.6 kbit/s (set `target`).
//!
//! [`CodelVars`] is the per-queue state FQ-CoDel keeps for each flow.
use super::{try_mark, DropReason, Fifo, Init, Limit, Qdisc, QdiscEvent, QueueCfg, QueueSection, Verdict};
use crate::schema::{bytes, positive, Configured, FieldError};
use crate::time::{Duration, Instant};
use crate::units::{Dur, Size};
use crate::wire::Packet;
use std::collections::VecDeque;

/// `discipline = "codel"`: the scenario's keys.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodelCfg {
    pub limit: Option<Limit>,
    pub ecn: Option<bool>,
    pub target: Option<Dur>,
    pub interval: Option<Dur>,
    pub mtu: Option<Size>,
}

impl Configured for Codel {
    type Section = CodelCfg;
}

impl QueueSection for CodelCfg {
    super::limit_and_ecn!();
    fn check(&self) -> Result<(), FieldError> {
        check_keys(self.target, self.interval, self.mtu)
    }
}

/// CoDel's keys' ranges (CoDel's and FQ-CoDel's sections).
pub(super) fn check_keys(target: Option<Dur>, interval: Option<Dur>, mtu: Option<Size>) -> Result<(), FieldError> {
    positive("target", target)?;
    positive("interval", interval)?;
    bytes("mtu", mtu, 0, 65535)
}

impl CodelConfig {
    /// The defaults with what a section sets.
    pub fn with_keys(target: Option<Dur>, interval: Option<Dur>, mtu: Option<Size>) -> CodelConfig {
        let d = CodelConfig::default();
        CodelConfig {
            target: target.map_or(d.target, |x| x.0),
            interval: interval.map_or(d.interval, |x| x.0),
            mtu: mtu.map_or(d.mtu, |s| s.0 as u32),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CodelConfig {
    /// Acceptable standing sojourn time (default 5 ms).
    pub target: Duration,
    /// Window over which the sojourn time must stay above `target` (100 ms).
    pub interval: Duration,
    /// A queue of at most this many bytes is never judged standing (1500 B).
    pub mtu: u32,
}

impl Default for CodelConfig {
    fn default() -> Self {
        CodelConfig { target: Duration::from_millis(5), interval: Duration::from_millis(100), mtu: 1500 }
    }
}

/// The queue CoDel takes packets from, and the backlog it judges.
pub trait Source {
    fn pop(&mut self) -> Option<Packet>;
    /// Bytes still queued (after the packet just taken).
    fn backlog(&self) -> u64;
}

impl Source for Fifo {
    fn pop(&mut self) -> Option<Packet> {
        Fifo::pop(self)
    }
    fn backlog(&self) -> u64 {
        self.bytes()
    }
}

/// CoDel's state for one queue (RFC 8289: `first_above_time_`, `drop_next_`,
/// `count_`, `lastcount_`, `dropping_`).
#[derive(Clone, Debug, Default)]
pub struct CodelVars {
    first_above: Option<Instant>,
    drop_next: Instant,
    count: u32,
    lastcount: u32,
    dropping: bool,
}

/// `t + interval / sqrt(count)`.
fn control_law(t: Instant, interval: Duration, count: u32) -> Instant {
    t + Duration((interval.0 as f64 / (count as f64).sqrt()) as i64)
}

impl CodelVars {
    /// RFC 8289 `dodequeue`'s judgement of the packet just taken: whether its
    /// sojourn has been at or above target for a whole interval.
    fn ok_to_drop(&mut self, c: &CodelConfig, now: Instant, p: Option<&Packet>, backlog: u64) -> bool {
        let Some(p) = p else {
            self.first_above = None;
            return false;
        };
        if now - p.meta.queued < c.target || backlog <= c.mtu as u64 {
            self.first_above = None;
            return false;
        }
        match self.first_above {
            None => {
                self.first_above = Some(now + c.interval);
                false
            }
            Some(t) => now >= t,
        }
    }

    /// RFC 8289 `dequeue`: the packet to send, after the drops (and marks) due
    /// now, which go to `events`.
    pub fn dequeue(
        &mut self,
        c: &CodelConfig,
        ecn: bool,
        now: Instant,
        src: &mut impl Source,
        events: &mut VecDeque<QdiscEvent>,
    ) -> Option<Packet> {
        let mut p = src.pop();
        let drop = self.ok_to_drop(c, now, p.as_ref(), src.backlog());
        if self.dropping {
            if !drop {
                self.dropping = false;
            }
            while self.dropping && now >= self.drop_next {
                let mut pk = p.take().expect("dropping state with a packet");
                self.count += 1;
                if try_mark(ecn, &mut pk) {
                    events.push_back(QdiscEvent::Mark { at: now, flow: pk.meta.flow, len: pk.size() });
                    self.drop_next = control_law(self.drop_next, c.interval, self.count);
                    return Some(pk);
                }
                events.push_back(QdiscEvent::Drop { at: now, packet: pk, reason: DropReason::Aqm });
                p = src.pop();
                if !self.ok_to_drop(c, now, p.as_ref(), src.backlog()) {
                    self.dropping = false;
                } else {
                    self.drop_next = control_law(self.drop_next, c.interval, self.count);
                }
            }
        } else if drop {
            let mut pk = p.take().expect("a packet to drop");
            if try_mark(ecn, &mut pk) {
                events.push_back(QdiscEvent::Mark { at: now, flow: pk.meta.flow, len: pk.size() });
                p = Some(pk);
            } else {
                events.push_back(QdiscEvent::Drop { at: now, packet: pk, reason: DropReason::Aqm });
                p = src.pop();
                self.ok_to_drop(c, now, p.as_ref(), src.backlog());
            }
            self.dropping = true;
            let delta = self.count.wrapping_sub(self.lastcount);
            self.count = if delta > 1 && now - self.drop_next < c.interval * 16 { delta } else { 1 };
            self.lastcount = self.count;
            self.drop_next = control_law(now, c.interval, self.count);
        }
        p
    }
}

#[derive(Clone, Debug)]
pub struct Codel {
    fifo: Fifo,
    limit: Limit,
    ecn: bool,
    cfg: CodelConfig,
    vars: CodelVars,
    events: VecDeque<QdiscEvent>,
}

impl Codel {
    pub fn new(i: &Init) -> Codel {
        Codel {
            fifo: Fifo::default(),
            limit: i.cfg.limit,
            ecn: i.cfg.ecn,
            cfg: match &i.cfg.section {
                QueueCfg::Codel(s) => CodelConfig::with_keys(s.target, s.interval, s.mtu),
                _ => unreachable!("CoDel made from another discipline's section"),
            },
            vars: CodelVars::default(),
            events: VecDeque::new(),
        }
    }
}

impl Qdisc for Codel {
    // Out of line: the enum dispatch stays small enough to inline, so
    // drop-tail's path costs what it did before the trait.
    #[inline(never)]
    fn enqueue(&mut self, now: Instant, mut p: Packet) -> Verdict {
        if !self.limit.fits(self.fifo.len(), self.fifo.bytes(), p.size()) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        p.meta.queued = now;
        self.fifo.push(p);
        Verdict::Queued
    }
    #[inline(never)]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.vars.dequeue(&self.cfg, self.ecn, now, &mut self.fifo, &mut self.events)
    }
    super::aqm_common!(events);
    super::fifo_queries!();
    fn decides_at_enqueue(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{ms, pkt};
    use crate::queue::{QdiscConfig, QdiscKind, Queue};
    use crate::rng::Rng;

    /// RFC 8289 §5's pseudo-code, transcribed as it stands (its own queue, times
    /// as integer nanoseconds, `first_above_time_ == 0` meaning unset), as the
    /// reference the implementation must follow decision by decision.
    struct Rfc {
        q: VecDeque<(i64, u32, u32)>, // (tstamp, id, size)
        bytes: u64,
        limit: usize,
        target: i64,
        interval: i64,
        maxpacket: u64,
        first_above_time_: i64,
        drop_next_: i64,
        count_: u32,
        lastcount_: u32,
        dropping_: bool,
        dropped: Vec<u32>,
    }

    impl Rfc {
        fn enqueue(&mut self, now: i64, id: u32, size: u32) -> bool {
            if self.q.len() >= self.limit {
                return false; // drop(p)
            }
            self.q.push_back((now, id, size));
            self.bytes += size as u64;
            true
        }
        fn base_dequeue(&mut self) -> Option<(i64, u32, u32)> {
            let p = self.q.pop_front()?;
            self.bytes -= p.2 as u64;
            Some(p)
        }
        fn dodequeue(&mut self, now: i64) -> (Option<(i64, u32, u32)>, bool) {
            let p = self.base_dequeue();
            let Some(pk) = p else {
                self.first_above_time_ = 0;
                return (None, false);
            };
            let sojourn_time = now - pk.0;
            let mut ok_to_drop = false;
            if sojourn_time < self.target || self.bytes <= self.maxpacket {
                self.first_above_time_ = 0;
            } else if self.first_above_time_ == 0 {
                self.first_above_time_ = now + self.interval;
            } else if now >= self.first_above_time_ {
                ok_to_drop = true;
            }
            (p, ok_to_drop)
        }
        fn control_law(&self, t: i64, count: u32) -> i64 {
            t + (self.interval as f64 / (count as f64).sqrt()) as i64
        }
        fn dequeue(&mut self, now: i64) -> Option<u32> {
            let (mut p, mut ok) = self.dodequeue(now);
            if self.dropping_ {
                if !ok {
                    self.dropping_ = false;
                }
                while now >= self.drop_next_ && self.dropping_ {
                    self.dropped.push(p.unwrap().1);
                    self.count_ += 1;
                    (p, ok) = self.dodequeue(now);
                    if !ok {
                        self.dropping_ = false;
                    } else {
                        self.drop_next_ = self.control_law(self.drop_next_, self.count_);
                    }
                }
            } else if ok {
                self.dropped.push(p.unwrap().1);
                (p, _) = self.dodequeue(now);
                self.dropping_ = true;
                let delta = self.count_.wrapping_sub(self.lastcount_);
                self.count_ = 1;
                if delta > 1 && now - self.drop_next_ < 16 * self.interval {
                    self.count_ = delta;
                }
                self.drop_next_ = self.control_law(now, self.count_);
                self.lastcount_ = self.count_;
            }
            p.map(|p| p.1)
        }
    }

    /// Random arrivals and random service: phases of overload and underload of
    /// random lengths (so the queue builds, stands, drains and builds again, and
    /// CoDel re-enters its dropping state after gaps of a few intervals), sizes
    /// mostly 40, 576 and 1500 bytes (so the one-MTU test meets its boundary).
    #[test]
    fn follows_rfc_8289_pseudo_code_decision_by_decision() {
        let (mut reentries, mut total_drops) = (0, 0);
        for seed in 0..40 {
            let mut rng = Rng::stream(seed, 0, "codel-ref");
            let cfg = QdiscConfig::new(QdiscKind::Codel, Limit::Packets(200));
            let mut q = Queue::new(cfg.clone(), Rng::stream(seed, 0, "q"));
            let mut r = Rfc {
                q: VecDeque::new(),
                bytes: 0,
                limit: 200,
                target: CodelConfig::default().target.0,
                interval: CodelConfig::default().interval.0,
                maxpacket: CodelConfig::default().mtu as u64,
                first_above_time_: 0,
                drop_next_: 0,
                count_: 0,
                lastcount_: 0,
                dropping_: false,
                dropped: vec![],
            };
            let (mut now, mut phase_end, mut load) = (0.0f64, 0.0f64, 1.0f64);
            // The transmitter asks for a packet about once a millisecond.
            let mut next_service = rng.uniform() * 2.0;
            let mut was_dropping = false;
            for id in 0..8000u32 {
                if now >= phase_end {
                    load = if load > 1.0 { 0.2 + rng.uniform() * 0.6 } else { 1.3 + rng.uniform() * 1.5 };
                    phase_end =
                        now + if load > 1.0 { 100.0 + rng.uniform() * 1400.0 } else { 30.0 + rng.uniform() * 1000.0 };
                }
                now += rng.uniform() * 2.0 / load;
                while next_service <= now {
                    // Times on a 0.5 ms grid, so CoDel's boundaries (sojourn
                    // equal to target, now equal to first_above_time) are met.
                    let t = ms((next_service * 2.0).round() / 2.0);
                    let got = q.dequeue(t).map(|p| p.meta.flow as u32);
                    let want = r.dequeue(t.0);
                    assert_eq!(got, want, "seed {seed}: dequeue at {next_service} ms");
                    let mut ours = vec![];
                    while let Some(QdiscEvent::Drop { packet, .. }) = q.poll_event() {
                        ours.push(packet.meta.flow as u32);
                    }
                    assert_eq!(ours, std::mem::take(&mut r.dropped), "seed {seed}: drops at {next_service} ms");
                    total_drops += ours.len();
                    if r.dropping_ && !was_dropping && r.count_ > 1 {
                        reentries += 1;
                    }
                    was_dropping = r.dropping_;
                    next_service += rng.uniform() * 2.0;
                }
                let u = rng.uniform();
                let size = if u < 0.5 {
                    1500
                } else if u < 0.6 {
                    576
                } else if u < 0.8 {
                    40
                } else {
                    40 + (u * 1460.0) as u32
                };
                let t = ms((now * 2.0).round() / 2.0);
                let p = pkt(id as u16, size - 28, false);
                assert_eq!(q.enqueue(t, p) == Verdict::Queued, r.enqueue(t.0, id, size), "seed {seed} id {id}");
            }
        }
        assert!(
            total_drops > 1000 && reentries > 20,
            "the test must exercise the drop state: {total_drops} drops, {reentries} re-entries"
        );
    }

    /// With ECN an ECN-capable packet is marked where a drop was due and
    /// leaves; a packet that is not ECN-capable is still dropped.
    #[test]
    fn ecn_marks_instead_of_dropping() {
        for ect in [true, false] {
            let mut cfg = QdiscConfig::new(QdiscKind::Codel, Limit::Packets(1000));
            cfg.ecn = true;
            let mut q = Queue::new(cfg, Rng::stream(1, 0, "q"));
            let (mut marks, mut drops, mut out) = (0, 0, 0);
            for i in 0..3000 {
                let t = ms(i as f64);
                q.enqueue(t, pkt(0, 1000, ect));
                if i % 2 == 0 {
                    out += q.dequeue(t).is_some() as usize;
                }
                while let Some(e) = q.poll_event() {
                    match e {
                        QdiscEvent::Mark { .. } => marks += 1,
                        QdiscEvent::Drop { .. } => drops += 1,
                    }
                }
            }
            if ect {
                assert!(marks > 10 && drops == 0, "{marks} {drops}");
                assert_eq!(out, 1500, "a mark does not take a packet away");
            } else {
                assert!(marks == 0 && drops > 10, "{marks} {drops}");
            }
        }
    }
}
