//! RED, Random Early Detection (Floyd & Jacobson 1993, §4's algorithm, with
//! Floyd's 2000 "gentle" variant), with Linux `sch_red`'s parameters (`tc-red`:
//! `min`, `max`, `probability`, `avpkt`, `burst`, `bandwidth`, `ecn`,
//! `harddrop`).
//!
//! At each arrival the average queue `avg` is updated — `avg += w·(q − avg)`
//! while the queue is busy; after an idle period `avg ·= (1 − w)^m`, `m` the
//! packets of `avpkt` bytes the link could have sent meanwhile at `bandwidth` —
//! then:
//! - `avg < min`: enqueue (`count = −1`);
//! - `min ≤ avg < max`: `count += 1`, `pb = max_p·(avg − min)/(max − min)`,
//!   `pa = pb/(1 − count·pb)`; with probability `pa` mark or drop, `count = 0`;
//! - gentle, `max ≤ avg < 2·max`: the same with `pb = max_p + (1 − max_p)·(avg −
//!   max)/max`;
//! - above (`avg ≥ max` without gentle, `≥ 2·max` with it): drop (`count = 0`);
//!   with `ecn` and `harddrop = false` an ECN-capable packet is marked instead.
//!
//! Then the hard limit applies (a tail drop), as Linux's child FIFO does.
//!
//! `avg`, `min` and `max` count bytes when the limit is in bytes and packets when
//! it is in packets (ns-3's two modes; Linux counts bytes). The queue is idle
//! from the dequeue that empties it (Linux: from the dequeue that finds it
//! empty) until the next arrival.
//!
//! Defaults: `max` = limit/4, `min` = max/3 (`tc-red`), `probability` (max_p)
//! 0.02, `avpkt` 1000 B, `burst` (2·min + max)/(3·avpkt) packets, from which the
//! weight `w` = 2^−k for the least k with `burst + 1 − min/avpkt ≤ (1 − (1 −
//! w)^burst)/w` (`tc_red_eval_ewma`), `bandwidth` the link's rate, `gentle`
//! on (Floyd's recommendation; ns-3's default), `harddrop` on (ns-3's
//! `UseHardDrop`; Linux's default is off), `ecn` off. Not modelled: adaptive RED.
use super::{try_mark, DropReason, Fifo, Init, Limit, Qdisc, QdiscEvent, QueueCfg, QueueSection, Verdict};
use crate::rng::Rng;
use crate::schema::{bytes, count, within, Configured, FieldError};
use crate::time::{Duration, Instant};
use crate::units::{Rate, Size};
use crate::wire::Packet;

/// `discipline = "red"`: the scenario's keys (tc-red's names).
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RedCfg {
    pub limit: Option<Limit>,
    pub ecn: Option<bool>,
    /// Thresholds of the average, `"5pkt"` or a size.
    pub min: Option<Limit>,
    pub max: Option<Limit>,
    /// max_p.
    pub probability: Option<f64>,
    pub avpkt: Option<Size>,
    pub burst: Option<u32>,
    pub bandwidth: Option<Rate>,
    pub gentle: Option<bool>,
    pub harddrop: Option<bool>,
}

impl Configured for Red {
    type Section = RedCfg;
}

impl QueueSection for RedCfg {
    super::limit_and_ecn!();
    /// Ranges, and the thresholds in order.
    fn check(&self) -> Result<(), FieldError> {
        within("probability", self.probability, 1e-9, 1.0)?;
        bytes("avpkt", self.avpkt, 1, 65535)?;
        count("burst", self.burst, 1, 1_000_000)?;
        if self.bandwidth.is_some_and(|r| r.0 == 0) {
            return Err(FieldError::new("bandwidth", "must be a positive rate"));
        }
        let avpkt = self.avpkt.map_or(1000, |s| s.0);
        let amount = |l: Limit| match l {
            Limit::Packets(n) => n as u64 * avpkt,
            Limit::Bytes(b) => b,
        };
        if let (Some(lo), Some(hi)) = (self.min, self.max) {
            if amount(lo) >= amount(hi) {
                return Err(FieldError::new("min", "must be below max"));
            }
        }
        Ok(())
    }
}

impl RedCfg {
    /// The model's configuration for a queue of `limit` on a link of `rate`.
    /// Thresholds count what the limit counts; the other unit converts through
    /// avpkt (as tc-red's bytes and ns-3's packets do).
    pub fn model(&self, limit: Limit, rate: u64) -> RedConfig {
        let avpkt = self.avpkt.map_or(1000, |s| s.0 as u32);
        let unit = |l: Limit| match (l, limit) {
            (Limit::Packets(n), Limit::Packets(_)) => n as f64,
            (Limit::Bytes(b), Limit::Bytes(_)) => b as f64,
            (Limit::Packets(n), Limit::Bytes(_)) => n as f64 * avpkt as f64,
            (Limit::Bytes(b), Limit::Packets(_)) => b as f64 / avpkt as f64,
        };
        RedConfig {
            min: self.min.map(unit),
            max: self.max.map(unit),
            max_p: self.probability,
            avpkt: Some(avpkt),
            burst: self.burst,
            bandwidth: Some(self.bandwidth.map_or(rate, |b| b.0)),
            gentle: self.gentle,
            harddrop: self.harddrop,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Default)]
pub struct RedConfig {
    /// Lower threshold, in the limit's unit (default max/3).
    pub min: Option<f64>,
    /// Upper threshold (default limit/4).
    pub max: Option<f64>,
    /// max_p (default 0.02).
    pub max_p: Option<f64>,
    /// Average packet size in bytes (default 1000).
    pub avpkt: Option<u32>,
    /// Burst in packets that the average absorbs (default (2·min + max)/(3·avpkt)).
    pub burst: Option<u32>,
    /// Link rate for the idle decay, bit/s (default: the link's; set by `build`).
    pub bandwidth: Option<u64>,
    /// Gentle mode (default true).
    pub gentle: Option<bool>,
    /// Drop above the upper region even ECN-capable packets (default true).
    pub harddrop: Option<bool>,
}

/// The parameters as RED runs them.
#[derive(Clone, Debug, PartialEq)]
pub struct RedParams {
    pub min: f64,
    pub max: f64,
    pub max_p: f64,
    pub w: f64,
    /// Time to send `avpkt` bytes at `bandwidth` (the idle decay's unit).
    pub avpkt_time: Duration,
    pub gentle: bool,
    pub harddrop: bool,
    /// Thresholds and average in bytes (true) or packets.
    pub bytes: bool,
}

/// `tc_red_eval_ewma`: the weight 2^−k for the least k such that a burst of
/// `burst` packets arriving at an empty queue does not push the average past
/// `qmin` (in `avpkt` packets).
pub fn ewma_weight(qmin_pkts: f64, burst: u32) -> f64 {
    let a = burst as f64 + 1.0 - qmin_pkts;
    let mut w: f64 = 0.5;
    for _ in 1..32 {
        if a <= (1.0 - (1.0 - w).powi(burst as i32)) / w {
            return w;
        }
        w /= 2.0;
    }
    w
}

impl RedConfig {
    /// Fills in the defaults for a queue of `limit` on a link of `rate_bps`.
    pub fn resolve(&self, limit: Limit, rate_bps: u64) -> RedParams {
        let (cap, bytes) = match limit {
            Limit::Packets(n) => (n as f64, false),
            Limit::Bytes(b) => (b as f64, true),
        };
        let max = self.max.unwrap_or(cap / 4.0);
        let min = self.min.unwrap_or(max / 3.0);
        let avpkt = self.avpkt.unwrap_or(1000).max(1);
        let in_pkts = |x: f64| if bytes { x / avpkt as f64 } else { x };
        let burst =
            self.burst.unwrap_or_else(|| ((2.0 * in_pkts(min) + in_pkts(max)) / 3.0).ceil().max(1.0) as u32).max(1);
        let bw = self.bandwidth.unwrap_or(rate_bps).max(1);
        RedParams {
            min,
            max,
            max_p: self.max_p.unwrap_or(0.02),
            w: ewma_weight(in_pkts(min), burst),
            avpkt_time: Duration::transmission(avpkt as u64, bw),
            gentle: self.gentle.unwrap_or(true),
            harddrop: self.harddrop.unwrap_or(true),
            bytes,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Red {
    fifo: Fifo,
    limit: Limit,
    ecn: bool,
    p: RedParams,
    rng: Rng,
    avg: f64,
    count: i64,
    /// Since when the queue has been empty (None: busy).
    idle_since: Option<Instant>,
}

/// What RED decides for an arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RedAction {
    Enqueue,
    /// Early (probabilistic) mark or drop.
    Early,
    /// The region above the thresholds: drop (or mark without harddrop).
    Hard,
}

impl Red {
    pub fn new(i: &Init) -> Red {
        let QueueCfg::Red(s) = &i.cfg.section else { unreachable!("RED made from another discipline's section") };
        Red::with(&s.model(i.cfg.limit, i.cfg.rate.unwrap_or(10_000_000)), i.cfg.limit, i.cfg.ecn, i.rng.clone())
    }

    /// RED of the model's configuration `c` (bandwidth default 10 Mbit/s).
    pub fn with(c: &RedConfig, limit: Limit, ecn: bool, rng: Rng) -> Red {
        Red {
            fifo: Fifo::default(),
            limit,
            ecn,
            p: c.resolve(limit, c.bandwidth.unwrap_or(10_000_000)),
            rng,
            avg: 0.0,
            count: -1,
            idle_since: Some(Instant::ZERO),
        }
    }

    /// The average queue now (for tests and traces).
    pub fn avg(&self) -> f64 {
        self.avg
    }

    fn current(&self) -> f64 {
        if self.p.bytes {
            self.fifo.bytes() as f64
        } else {
            self.fifo.len() as f64
        }
    }

    /// Floyd & Jacobson's per-arrival step: the average, then the decision.
    fn action(&mut self, now: Instant) -> RedAction {
        match self.idle_since.take() {
            Some(t) => {
                let m = (now - t).0 as f64 / self.p.avpkt_time.0.max(1) as f64;
                self.avg *= (1.0 - self.p.w).powf(m);
            }
            None => self.avg += self.p.w * (self.current() - self.avg),
        }
        let (min, max, max_p) = (self.p.min, self.p.max, self.p.max_p);
        let pb = if self.avg < min {
            self.count = -1;
            return RedAction::Enqueue;
        } else if self.avg < max {
            max_p * (self.avg - min) / (max - min)
        } else if self.p.gentle && self.avg < 2.0 * max {
            max_p + (1.0 - max_p) * (self.avg - max) / max
        } else {
            self.count = 0;
            return RedAction::Hard;
        };
        self.count += 1;
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
        if self.rng.uniform() < pa {
            self.count = 0;
            RedAction::Early
        } else {
            RedAction::Enqueue
        }
    }
}

impl Qdisc for Red {
    // Out of line: the enum dispatch stays small enough to inline, so
    // drop-tail's path costs what it did before the trait.
    #[inline(never)]
    fn enqueue(&mut self, now: Instant, mut p: Packet) -> Verdict {
        let verdict = match self.action(now) {
            RedAction::Enqueue => Verdict::Queued,
            RedAction::Early if try_mark(self.ecn, &mut p) => Verdict::Marked,
            RedAction::Hard if !self.p.harddrop && try_mark(self.ecn, &mut p) => Verdict::Marked,
            RedAction::Early | RedAction::Hard => Verdict::Dropped(DropReason::Aqm),
        };
        let verdict = match verdict {
            Verdict::Dropped(_) => verdict,
            _ if !self.limit.fits(self.fifo.len(), self.fifo.bytes(), p.size()) => {
                Verdict::Dropped(DropReason::Overflow)
            }
            _ => {
                self.fifo.push(p);
                verdict
            }
        };
        if self.fifo.is_empty() {
            // Nothing queued after all: idle again from now.
            self.idle_since = Some(now);
        }
        verdict
    }
    #[inline(never)]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        let p = self.fifo.pop();
        if self.fifo.is_empty() && self.idle_since.is_none() {
            self.idle_since = Some(now);
        }
        p
    }
    super::aqm_common!();
    super::fifo_queries!();
    fn decides_at_enqueue(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::testutil::{ms, pkt};

    fn red(limit: Limit, ecn: bool, f: impl FnOnce(&mut RedConfig)) -> Red {
        let mut c = RedConfig { bandwidth: Some(1_000_000), ..Default::default() };
        f(&mut c);
        Red::with(&c, limit, ecn, Rng::stream(1, 0, "red"))
    }

    /// tc-red's weight: the least 2^−k whose EWMA lets a burst of `burst`
    /// packets into an empty queue stay below `min` (`tc_red_eval_ewma`). For
    /// tc-red(8)'s example (min 30 KB, max 90 KB, avpkt 1 KB, burst 55) that is
    /// 2^−5: 2^−4 lets 56 − 30 = 26 packets' worth exceed (1 − (15/16)^55)·16
    /// = 15.6, 2^−5 gives 27.5 ≥ 26.
    #[test]
    fn the_weight_follows_tc() {
        assert_eq!(ewma_weight(30.0, 55), 1.0 / 32.0);
        let p = RedConfig::default().resolve(Limit::Packets(60), 1_000_000);
        // max 15, min 5, burst ⌈(10 + 15)/3⌉ = 9.
        assert_eq!((p.min, p.max, p.max_p), (5.0, 15.0, 0.02));
        assert_eq!(p.w, ewma_weight(5.0, 9));
    }

    /// Floyd & Jacobson §4: the average moves by w toward the queue at every
    /// arrival while busy, and decays by (1 − w)^m over an idle period of m
    /// packet times.
    #[test]
    fn the_average_follows_the_ewma_and_decays_when_idle() {
        let mut q = red(Limit::Packets(1000), false, |c| {
            c.min = Some(900.0);
            c.max = Some(950.0);
        });
        let w = q.p.w;
        let mut want = 0.0;
        for i in 0..200 {
            // The first arrival ends the initial idle period (the average stays 0).
            let t = ms(i as f64 * 0.01);
            if i > 0 {
                want += w * (i as f64 - want);
            }
            assert_eq!(q.enqueue(t, pkt(0, 972, false)), Verdict::Queued);
            assert!((q.avg() - want).abs() < 1e-9, "{i}: {} vs {want}", q.avg());
        }
        let mut t = ms(2.0);
        while q.dequeue(t).is_some() {
            t += Duration::from_millis(8);
        }
        // 1000 B at 1 Mbit/s is 8 ms: 0.8 s idle is 100 packet times.
        let before = q.avg();
        q.enqueue(t + Duration::from_millis(800), pkt(0, 972, false));
        // From the last departure (8 ms before `t`): 808 ms, 101 packet times.
        let decayed = before * (1.0 - w).powf(101.0);
        assert!((q.avg() - decayed).abs() < 1e-9 * before, "{} vs {decayed}", q.avg());
    }

    /// Holds the average at `avg` and counts the early drops of many arrivals,
    /// against the rate Floyd & Jacobson's rule gives: `count` packets since
    /// the last drop (1 for the first after it), each dropped with
    /// pb/(1 − count·pb), so the gap is uniform on 1..(1/pb − 1) and the rate
    /// about 2·pb. (Linux's `red_action` spaces them uniformly on 1..1/pb.)
    fn drop_rate_at(avg: f64, gentle: bool) -> (f64, f64) {
        let mut q = red(Limit::Packets(1000), false, |c| {
            c.min = Some(10.0);
            c.max = Some(30.0);
            c.max_p = Some(0.1);
            c.gentle = Some(gentle);
        });
        let p = q.p.clone();
        let pb = if avg < p.max {
            p.max_p * (avg - p.min) / (p.max - p.min)
        } else {
            p.max_p + (1.0 - p.max_p) * (avg - p.max) / p.max
        };
        let mut drops = 0;
        let n = 200_000;
        for i in 0..n {
            q.avg = avg;
            q.idle_since = None;
            // A queue equal to the average keeps it there.
            while q.fifo.len() < avg as usize {
                q.fifo.push(pkt(0, 972, false));
            }
            if let Verdict::Dropped(DropReason::Aqm) = q.enqueue(ms(i as f64), pkt(0, 972, false)) {
                drops += 1;
            }
            while q.fifo.len() > avg as usize {
                q.fifo.pop();
            }
        }
        // The mean gap from the rule itself.
        let (mut survive, mut mean_gap) = (1.0, 0.0);
        for count in 1..100_000 {
            let denom = 1.0 - count as f64 * pb;
            let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
            mean_gap += survive * pa * count as f64;
            survive *= 1.0 - pa;
            if survive == 0.0 {
                break;
            }
        }
        (drops as f64 / n as f64, 1.0 / mean_gap)
    }

    #[test]
    fn early_drops_follow_the_linear_and_gentle_regions() {
        assert_eq!(drop_rate_at(5.0, true).0, 0.0, "below min: none");
        for avg in [15.0, 20.0, 25.0] {
            let (got, want) = drop_rate_at(avg, true);
            assert!((got - want).abs() < 0.1 * want, "avg {avg}: {got} vs {want}");
        }
        // Gentle: between max and 2·max the probability climbs from max_p to 1.
        for avg in [35.0, 45.0] {
            let (got, want) = drop_rate_at(avg, true);
            assert!((got - want).abs() < 0.1 * want, "gentle avg {avg}: {got} vs {want}");
        }
        assert_eq!(drop_rate_at(60.0, true).0, 1.0, "above 2·max: every packet");
        assert_eq!(drop_rate_at(35.0, false).0, 1.0, "not gentle: every packet above max");
    }

    /// ECN-capable packets are marked instead of dropped in the early region;
    /// above the thresholds they are dropped unless `harddrop` is off.
    #[test]
    fn ecn_marks_early_and_hard_drops_above() {
        for harddrop in [true, false] {
            let mut q = red(Limit::Packets(1000), true, |c| {
                c.min = Some(10.0);
                c.max = Some(30.0);
                c.max_p = Some(0.5);
                c.harddrop = Some(harddrop);
            });
            let (mut marks, mut drops) = (0, 0);
            for i in 0..5000 {
                match q.enqueue(ms(i as f64 * 0.01), pkt(0, 972, true)) {
                    Verdict::Marked => marks += 1,
                    Verdict::Dropped(DropReason::Aqm) => drops += 1,
                    _ => {}
                }
            }
            assert!(marks > 20, "{marks}");
            if harddrop {
                assert!(drops > 100, "the average passes 2·max: {drops}");
            } else {
                assert_eq!(drops, 0);
            }
        }
    }
}
