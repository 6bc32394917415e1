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
use super::{try_mark, DropReason, Fifo, Init, Limit, Qdisc, QdiscEvent, Verdict};
use crate::rng::Rng;
use crate::time::{Duration, Instant};
use crate::wire::Packet;

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
        let c = i.cfg.pie.clone();
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
    fn dequeue(&mut self, now: Instant) -> Option<Packet> {
        self.catch_up(now);
        let p = self.fifo.pop()?;
        self.qdelay = if self.fifo.is_empty() { Duration::ZERO } else { now - p.meta.queued };
        Some(p)
    }
    fn poll_event(&mut self) -> Option<QdiscEvent> {
        None
    }
    fn len(&self) -> usize {
        self.fifo.len()
    }
    fn bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn decides_at_enqueue(&self) -> bool {
        true
    }
}
