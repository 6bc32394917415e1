//! PIE, Proportional Integral controller Enhanced (RFC 8033 §4 and its
//! Appendix A pseudo-code): at every arrival a packet is dropped (or, with ECN,
//! marked) with probability `drop_prob`, which a PI controller on the queueing
//! delay recomputes every `t_update`:
//!
//! `p = alpha·(qdelay − target) + beta·(qdelay − qdelay_old)`, scaled down while
//! `drop_prob` is small (÷2048 below 10⁻⁶, ÷512 below 10⁻⁵, ÷128 below 10⁻⁴, ÷32
//! below 10⁻³, ÷8 below 10⁻², ÷2 below 0.1); above 0.1 a step is capped at 0.02
//! (§5.5); `drop_prob += p`, decayed by 0.98 when both delays are zero, bounded
//! to [0, 1].
//!
//! - The delay is measured by timestamps (§4.3's second way; Linux's default,
//!   `dq_rate_estimator` off): the sojourn of the last packet dequeued, zero once
//!   the queue is empty.
//! - Burst allowance (§4.4): `max_burst` at first; arrivals skip the random drop
//!   while it is above zero; each update takes `t_update` off it, and it is reset
//!   to `max_burst` when `drop_prob` is 0 and both delay samples are below half
//!   the target.
//! - Work-conserving safeguard (§4.1): no random drop while `qdelay_old <
//!   target/2` and `drop_prob < 0.2`, or while at most two packets of
//!   `mean_pkt_size` are queued.
//! - ECN (§5.1): an ECN-capable packet is marked instead of dropped while
//!   `drop_prob ≤ ecn_threshold` (10 %); above it, dropped.
//! - Overflow of the hard limit is a tail drop.
//!
//! Defaults (RFC 8033 §4 and §5): `target` (QDELAY_REF) 15 ms, `t_update` 15 ms,
//! `alpha` 0.125 Hz, `beta` 1.25 Hz, `max_burst` 150 ms, `mean_pkt_size` 1500 B,
//! `ecn_threshold` 0.1, `limit` the position's default (Linux: 1000 packets),
//! `ecn` off. Not modelled: the optional departure-rate estimator, byte-mode
//! scaling, derandomization (§5.4), Appendix B's activation threshold.
//!
//! The periodic update runs lazily: every update due by an operation's time runs
//! (in order, each with the delay measured before it) when that operation comes,
//! which gives the same decisions as a timer, without one; a long idle period
//! at the controller's rest state (probability 0, no delay, full allowance)
//! is skipped at once.
use super::{try_mark, DropReason, Fifo, Init, Limit, Qdisc, QdiscEvent, QueueCfg, QueueSection, Verdict};
use crate::rng::Rng;
use crate::schema::{bytes, positive, within, Configured, FieldError};
use crate::time::{Duration, Instant};
use crate::units::{Dur, Size};
use crate::wire::Packet;

/// `discipline = "pie"`: the scenario's keys (RFC 8033's names, lower case).
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PieCfg {
    pub limit: Option<Limit>,
    pub ecn: Option<bool>,
    pub target: Option<Dur>,
    pub t_update: Option<Dur>,
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
    pub max_burst: Option<Dur>,
    pub mean_pkt_size: Option<Size>,
    pub ecn_threshold: Option<f64>,
}

impl Configured for Pie {
    type Section = PieCfg;
}

impl QueueSection for PieCfg {
    super::limit_and_ecn!();
    fn check(&self) -> Result<(), FieldError> {
        positive("target", self.target)?;
        positive("t_update", self.t_update)?;
        // No burst allowance (0) is allowed.
        if self.max_burst.is_some_and(|Dur(x)| x.nanos() != 0) {
            positive("max_burst", self.max_burst)?;
        }
        within("alpha", self.alpha, 0.0, 1000.0)?;
        within("beta", self.beta, 0.0, 1000.0)?;
        within("ecn_threshold", self.ecn_threshold, 0.0, 1.0)?;
        bytes("mean_pkt_size", self.mean_pkt_size, 1, 65535)
    }
}

impl PieCfg {
    /// The model's configuration: the defaults with what the section sets.
    pub fn model(&self) -> PieConfig {
        let d = PieConfig::default();
        let dur = |x: Option<Dur>, def: Duration| x.map_or(def, |x| x.0);
        PieConfig {
            target: dur(self.target, d.target),
            t_update: dur(self.t_update, d.t_update),
            alpha: self.alpha.unwrap_or(d.alpha),
            beta: self.beta.unwrap_or(d.beta),
            max_burst: dur(self.max_burst, d.max_burst),
            mean_pkt_size: self.mean_pkt_size.map_or(d.mean_pkt_size, |s| s.0 as u32),
            ecn_threshold: self.ecn_threshold.unwrap_or(d.ecn_threshold),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PieConfig {
    /// QDELAY_REF, the latency target (default 15 ms).
    pub target: Duration,
    /// T_UPDATE, the controller's period (default 15 ms).
    pub t_update: Duration,
    /// alpha, Hz (default 0.125).
    pub alpha: f64,
    /// beta, Hz (default 1.25).
    pub beta: f64,
    /// MAX_BURST, the burst allowance (default 150 ms).
    pub max_burst: Duration,
    /// MEAN_PKTSIZE of the safeguard, bytes (default 1500).
    pub mean_pkt_size: u32,
    /// Drop probability above which ECN-capable packets are dropped (0.1).
    pub ecn_threshold: f64,
}

impl Default for PieConfig {
    fn default() -> Self {
        PieConfig {
            target: Duration::from_millis(15),
            t_update: Duration::from_millis(15),
            alpha: 0.125,
            beta: 1.25,
            max_burst: Duration::from_millis(150),
            mean_pkt_size: 1500,
            ecn_threshold: 0.1,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Pie {
    fifo: Fifo,
    limit: Limit,
    ecn: bool,
    c: PieConfig,
    rng: Rng,
    drop_prob: f64,
    qdelay: Duration,
    qdelay_old: Duration,
    burst_allowance: Duration,
    next_update: Instant,
}

/// RFC 8033 §4.2's scaling of the step by the size of the probability.
pub fn scale_step(p: f64, drop_prob: f64) -> f64 {
    let div = [(1e-6, 2048.0), (1e-5, 512.0), (1e-4, 128.0), (1e-3, 32.0), (1e-2, 8.0), (1e-1, 2.0)]
        .iter()
        .find(|&&(below, _)| drop_prob < below)
        .map_or(1.0, |&(_, d)| d);
    p / div
}

impl Pie {
    pub fn new(i: &Init) -> Pie {
        let QueueCfg::Pie(s) = &i.cfg.section else { unreachable!("PIE made from another discipline's section") };
        let c = s.model();
        Pie {
            fifo: Fifo::default(),
            limit: i.cfg.limit,
            ecn: i.cfg.ecn,
            rng: i.rng.clone(),
            drop_prob: 0.0,
            qdelay: Duration::ZERO,
            qdelay_old: Duration::ZERO,
            burst_allowance: c.max_burst,
            next_update: Instant::ZERO + c.t_update,
            c,
        }
    }

    /// The drop probability now (tests, traces).
    pub fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// One update of the controller (RFC 8033 §4.2, §4.4).
    fn update(&mut self) {
        let (q, old, target) = (self.qdelay.as_secs_f64(), self.qdelay_old.as_secs_f64(), self.c.target.as_secs_f64());
        let mut p = scale_step(self.c.alpha * (q - target) + self.c.beta * (q - old), self.drop_prob);
        if self.drop_prob >= 0.1 && p > 0.02 {
            p = 0.02;
        }
        self.drop_prob += p;
        if self.qdelay == Duration::ZERO && self.qdelay_old == Duration::ZERO {
            self.drop_prob *= 0.98;
        }
        self.drop_prob = self.drop_prob.clamp(0.0, 1.0);
        self.burst_allowance = (self.burst_allowance - self.c.t_update).max(Duration::ZERO);
        let half = self.c.target / 2;
        if self.drop_prob == 0.0 && self.qdelay < half && self.qdelay_old < half {
            self.burst_allowance = self.c.max_burst;
        }
        self.qdelay_old = self.qdelay;
    }

    /// Runs every update due at or before `now`.
    fn catch_up(&mut self, now: Instant) {
        let step = self.c.t_update.max(Duration(1));
        while self.next_update <= now {
            let rest = self.drop_prob == 0.0
                && self.qdelay == Duration::ZERO
                && self.qdelay_old == Duration::ZERO
                && self.burst_allowance == self.c.max_burst;
            if rest {
                let n = (now - self.next_update).0 / step.0 + 1;
                self.next_update += step * n;
                return;
            }
            self.update();
            self.next_update += step;
        }
    }

    /// §4.1: whether to drop (or mark) an arrival.
    fn drop_early(&mut self) -> bool {
        let safe = (self.qdelay_old < self.c.target / 2 && self.drop_prob < 0.2)
            || self.fifo.bytes() <= 2 * self.c.mean_pkt_size as u64;
        !safe && self.rng.uniform() < self.drop_prob
    }
}

impl Qdisc for Pie {
    // Out of line: the enum dispatch stays small enough to inline, so
    // drop-tail's path costs what it did before the trait.
    #[inline(never)]
    fn enqueue(&mut self, now: Instant, mut p: Packet) -> Verdict {
        self.catch_up(now);
        if !self.limit.fits(self.fifo.len(), self.fifo.bytes(), p.size()) {
            return Verdict::Dropped(DropReason::Overflow);
        }
        let mut verdict = Verdict::Queued;
        if self.burst_allowance == Duration::ZERO && self.drop_early() {
            if self.drop_prob <= self.c.ecn_threshold && try_mark(self.ecn, &mut p) {
                verdict = Verdict::Marked;
            } else {
                return Verdict::Dropped(DropReason::Aqm);
            }
        }
        p.meta.queued = now;
        self.fifo.push(p);
        verdict
    }
    #[inline(never)]
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.catch_up(now);
        let p = self.fifo.pop()?;
        self.qdelay = if self.fifo.is_empty() { Duration::ZERO } else { now - p.meta.queued };
        Some(p)
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
    use crate::queue::{QdiscConfig, QdiscKind, Queue};
    use std::collections::VecDeque;

    /// RFC 8033's pseudo-code (§4.1–4.4 and Appendix A), transcribed with its
    /// timer: `calculate_drop_prob` runs at every multiple of T_UPDATE, before
    /// any arrival or departure at the same instant; delays in seconds; the
    /// latency is the timestamp sojourn of the last departure (zero once the
    /// queue is empty); the random numbers come from the same stream, drawn only
    /// past the safeguard, as the implementation draws them.
    struct Rfc {
        q: VecDeque<(i64, u32, u32)>, // (tstamp ns, id, size)
        bytes: u64,
        limit: usize,
        c: PieConfig,
        drop_prob_: f64,
        qdelay_old_: f64,
        current_qdelay: f64,
        /// In nanoseconds: MAX_BURST − k·T_UPDATE in floating point never
        /// reaches exactly zero.
        burst_allowance_: i64,
        rng: Rng,
    }

    impl Rfc {
        fn enque(&mut self, now: i64, id: u32, size: u32) -> bool {
            if self.q.len() >= self.limit {
                return false;
            }
            if self.burst_allowance_ == 0 && self.drop_early() {
                return false;
            }
            self.q.push_back((now, id, size));
            self.bytes += size as u64;
            true
        }
        fn drop_early(&mut self) -> bool {
            let qref = self.c.target.as_secs_f64();
            if (self.qdelay_old_ < qref / 2.0 && self.drop_prob_ < 0.2) || self.bytes <= 2 * self.c.mean_pkt_size as u64
            {
                return false;
            }
            self.rng.uniform() < self.drop_prob_
        }
        fn deque(&mut self, now: i64) -> Option<u32> {
            let (t, id, size) = self.q.pop_front()?;
            self.bytes -= size as u64;
            self.current_qdelay = if self.q.is_empty() { 0.0 } else { Duration(now - t).as_secs_f64() };
            Some(id)
        }
        fn calculate_drop_prob(&mut self) {
            let (cur, old) = (self.current_qdelay, self.qdelay_old_);
            let qref = self.c.target.as_secs_f64();
            let mut p = self.c.alpha * (cur - qref) + self.c.beta * (cur - old);
            p = scale_step(p, self.drop_prob_);
            if self.drop_prob_ >= 0.1 && p > 0.02 {
                p = 0.02;
            }
            self.drop_prob_ += p;
            if cur == 0.0 && old == 0.0 {
                self.drop_prob_ *= 0.98;
            }
            self.drop_prob_ = self.drop_prob_.clamp(0.0, 1.0);
            self.burst_allowance_ = (self.burst_allowance_ - self.c.t_update.0).max(0);
            if self.drop_prob_ == 0.0 && cur < qref / 2.0 && old < qref / 2.0 {
                self.burst_allowance_ = self.c.max_burst.0;
            }
            self.qdelay_old_ = cur;
        }
    }

    /// Random arrivals in phases of overload and underload against a
    /// transmitter asking about once a millisecond: every arrival's fate, every
    /// departure and the probability after each update agree.
    #[test]
    fn follows_rfc_8033_pseudo_code_decision_by_decision() {
        let mut early_drops = 0;
        for seed in 0..30 {
            let mut rng = Rng::stream(seed, 0, "pie-ref");
            let cfg = QdiscConfig::new(QdiscKind::Pie, Limit::Packets(300));
            let qrng = Rng::stream(seed, 0, "q");
            let mut q = Queue::new(cfg.clone(), qrng.clone());
            let c = PieConfig::default();
            let mut r = Rfc {
                q: VecDeque::new(),
                bytes: 0,
                limit: 300,
                drop_prob_: 0.0,
                qdelay_old_: 0.0,
                current_qdelay: 0.0,
                burst_allowance_: c.max_burst.0,
                rng: qrng,
                c: c.clone(),
            };
            let t_update = c.t_update.0;
            let mut next_update = t_update;
            let (mut now, mut phase_end, mut load) = (0.0f64, 0.0f64, 1.0f64);
            let mut next_service = 0.5f64;
            for id in 0..15_000u32 {
                if now >= phase_end {
                    load = if load > 1.0 { 0.3 + rng.uniform() * 0.6 } else { 1.2 + rng.uniform() * 2.0 };
                    phase_end = now + 200.0 + rng.uniform() * 3000.0;
                }
                now += rng.uniform() * 2.0 / load;
                let t_arr = ms((now * 4.0).round() / 4.0).0;
                loop {
                    let t_srv = ms((next_service * 4.0).round() / 4.0).0;
                    let t = t_srv.min(t_arr);
                    while next_update <= t {
                        r.calculate_drop_prob();
                        next_update += t_update;
                    }
                    if t_srv > t_arr {
                        break;
                    }
                    let got = q.dequeue(Instant(t_srv)).map(|p| p.meta.flow as u32);
                    assert_eq!(got, r.deque(t_srv), "seed {seed}: departure at {t_srv} ns");
                    next_service += 0.6 + rng.uniform() * 0.8;
                }
                let size = if rng.uniform() < 0.7 { 1500 } else { 40 + (rng.uniform() * 1460.0) as u32 };
                let v = q.enqueue(Instant(t_arr), pkt(id as u16, size - 28, false));
                let want = r.enque(t_arr, id, size);
                assert_eq!(
                    v == Verdict::Queued,
                    want,
                    "seed {seed}: arrival {id} at {t_arr} ns (p = {})",
                    r.drop_prob_
                );
                if let (Queue::Pie(p), Verdict::Dropped(DropReason::Aqm)) = (&q, v) {
                    assert_eq!(p.drop_prob(), r.drop_prob_);
                    early_drops += 1;
                }
            }
        }
        assert!(early_drops > 500, "the controller must drop: {early_drops}");
    }

    /// §5.1: with ECN an ECN-capable packet is marked while the probability is
    /// at most 10 %, dropped above it.
    #[test]
    fn ecn_marks_up_to_ten_percent() {
        let mut cfg = QdiscConfig::new(QdiscKind::Pie, Limit::Packets(10_000));
        cfg.ecn = true;
        let mut q = Queue::new(cfg, Rng::stream(2, 0, "q"));
        let (mut marks, mut drops) = (0, 0);
        // Twice the service rate: the delay grows and the probability climbs.
        for i in 0..20_000 {
            let t = ms(i as f64 * 0.5);
            if i % 2 == 0 {
                q.dequeue(t);
            }
            let p = match &q {
                Queue::Pie(p) => p.drop_prob(),
                _ => unreachable!(),
            };
            match q.enqueue(t, pkt(0, 1472, true)) {
                Verdict::Marked => {
                    assert!(p <= 0.1, "marked at {p}");
                    marks += 1
                }
                Verdict::Dropped(DropReason::Aqm) => {
                    assert!(p > 0.1, "dropped an ECN-capable packet at {p}");
                    drops += 1
                }
                _ => {}
            }
        }
        // Marks do not slow an unresponsive sender: the probability passes
        // 10 % and drops follow; marks came first.
        assert!(marks > 10 && drops > 100, "{marks} marks, {drops} drops");
    }
}
