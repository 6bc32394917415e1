//! `gprs` link layer: a GPRS "long thin" link as the IP layer sees it (seed 003 §III–IV,
//! seed 004 §II–III), with persistent RLC ARQ underneath abstracted away.
//!
//! What the seeds measured and how it is modelled (every value configurable):
//! - Packets are carried whole and in order (RLC acknowledged mode: losses above RLC
//!   are rare, no reordering). The scenario's `rate` is the multislot rate — e.g.
//!   "3+1" with CS-2 measured at about 4.15 KB/s down and 1.4 KB/s up — set per
//!   direction with `[wireless.down] rate` / `[wireless.up] rate`; residual loss, if
//!   wanted, comes from the channel model applied to whole packets.
//! - Temporary block flow set-up: when a direction has been idle for longer than
//!   `tbf_idle` (default 1 s), the first packet waits a set-up delay drawn
//!   uniformly from `setup_down` (default 300 ms–2 s) or `setup_up` (default 100–600
//!   ms) — paging and channel assignment — and the packets queued behind it follow
//!   without it (seed 003 §III: "only the first packet in a burst experiences the
//!   high jitter"). With the scenario's one-way `delay` this gives latencies of
//!   roughly 0.6–3 s down and 0.4–1.3 s up.
//! - Outages (`outage_every`, mean time between outages, exponential; default off;
//!   `outage_duration` uniform, default 5–40 s, seed 003 §III): nothing is sent either
//!   way; packets wait. The link layer holds at most `rlc_buffer` packets (default
//!   10) — the rest wait in the interface queue (the gateway's ~120 KB buffer is
//!   `[wireless] queue`) — and drops those it has held longer than `pdu_lifetime`
//!   (default 20 s) when it can send again, so long outages lose packets in bursts.
//!   `outages = [[start, length], ...]` places outages at fixed times instead.
//! - Bandwidth varying with radio conditions: poor-radio periods (`poor_every`, mean
//!   time between them, exponential; default off; `poor_duration` default 10–60 s)
//!   leave `poor_share` (default 0.5) of the rate, both directions at once; a packet
//!   sent then occupies the link 1/share as long (traces show its airtime-equivalent
//!   size).
//! - ACK bunching on the uplink: with `uplink_period` (default off) the mobile sends
//!   only from the start of an uplink allocation period, then everything it holds
//!   back to back.
//!
//! Both ends draw the same outage schedule (one random stream), so an outage stops
//! both directions at once.
use super::frame::{unshare, Body, Frame, FrameKind};
use super::{Arq, ArqMachine, LinkInit, LinkSection, LinkStats};
use crate::rng::Rng;
use crate::schema::{positive_duration, Configured, FieldError};
use crate::time::{Duration, Instant};
use crate::units::{Dur, DurRange};
use crate::wire::Packet;
use std::collections::VecDeque;
use std::sync::Arc;

/// `protocol = "gprs"`: TBF set-up delays, outages, uplink bunching, poor radio.
#[derive(Clone, Debug, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct GprsCfg {
    /// Idle time after which the next packet pays a TBF set-up delay.
    pub tbf_idle: Option<Dur>,
    /// Set-up delay range [min, max] on the downlink / uplink.
    pub setup_down: Option<DurRange>,
    pub setup_up: Option<DurRange>,
    /// Packets the link layer holds (the rest wait in the interface queue).
    pub rlc_buffer: Option<u32>,
    /// Packets held longer than this are dropped when an outage ends.
    pub pdu_lifetime: Option<Dur>,
    /// Mean time between outages (exponential); absent: none.
    pub outage_every: Option<Dur>,
    /// Outage length range [min, max] (uniform).
    pub outage_duration: Option<DurRange>,
    /// Outages at fixed times, each [start, length], e.g. [["90s", "25s"]].
    pub outages: Option<Vec<Vec<Dur>>>,
    /// Uplink allocation period (ACK bunching); absent: none.
    pub uplink_period: Option<Dur>,
    /// Mean time between poor-radio periods; their length range; the rate share left.
    pub poor_every: Option<Dur>,
    pub poor_duration: Option<DurRange>,
    pub poor_share: Option<f64>,
}

impl Configured for Gprs {
    type Section = GprsCfg;
}

impl LinkSection for GprsCfg {
    /// Random streams `gprs.outage`, `gprs.poor` and `gprs.setup.<down|up>`;
    /// mobile 0's keep these names (outputs unchanged), the others' end in
    /// `.m<k>`.
    fn build(&self, i: &LinkInit) -> Arq {
        let stream = |l: &str| {
            let name = if i.mobile == 0 { l.to_string() } else { format!("{l}.m{}", i.mobile) };
            Rng::stream(i.seed, i.run, &name)
        };
        let setup = stream(if i.side == 0 { "gprs.setup.down" } else { "gprs.setup.up" });
        Gprs::new(self.config(i.side), stream("gprs.outage"), stream("gprs.poor"), setup).into()
    }
    fn check(&self) -> Result<(), FieldError> {
        for (k, d) in [
            ("tbf_idle", self.tbf_idle),
            ("pdu_lifetime", self.pdu_lifetime),
            ("outage_every", self.outage_every),
            ("uplink_period", self.uplink_period),
            ("poor_every", self.poor_every),
        ] {
            positive_duration(k, d)?;
        }
        if let Some(list) = &self.outages {
            if self.outage_every.is_some() {
                return Err(FieldError::new("outages", "give either fixed outages or outage_every, not both"));
            }
            let mut last = Duration::ZERO;
            for (i, o) in list.iter().enumerate() {
                if o.len() != 2 || o[0].0 < last || o[1].0 <= Duration::ZERO {
                    return Err(FieldError::new(
                        format!("outages[{i}]"),
                        "give [start, length] with a positive length, in time order without overlap, e.g. [\"90s\", \"25s\"]",
                    ));
                }
                last = o[0].0 + o[1].0;
            }
        }
        if self.poor_share.is_some_and(|s| !(s > 0.0 && s <= 1.0)) {
            return Err(FieldError::new("poor_share", "must be a share of the rate in (0, 1]"));
        }
        if self.rlc_buffer == Some(0) {
            return Err(FieldError::new("rlc_buffer", "must be at least 1 packet"));
        }
        Ok(())
    }
}

impl GprsCfg {
    /// The model's configuration for end `side` (0 sends the downlink, 1 the
    /// uplink): that direction's defaults with what the section sets.
    pub fn config(&self, side: usize) -> GprsConfig {
        let d = if side == 0 { GprsConfig::downlink() } else { GprsConfig::uplink() };
        let range = |v: Option<DurRange>, d: (Duration, Duration)| v.map(|r| (r.0, r.1)).unwrap_or(d);
        GprsConfig {
            tbf_idle: self.tbf_idle.map(|x| x.0).unwrap_or(d.tbf_idle),
            setup: range(if side == 0 { self.setup_down } else { self.setup_up }, d.setup),
            rlc_buffer: self.rlc_buffer.map(|x| x as usize).unwrap_or(d.rlc_buffer),
            pdu_lifetime: self.pdu_lifetime.map(|x| x.0).unwrap_or(d.pdu_lifetime),
            outage_every: self.outage_every.map(|x| x.0).or(d.outage_every),
            outage_duration: range(self.outage_duration, d.outage_duration),
            outage_list: self
                .outages
                .as_ref()
                .map(|v| v.iter().map(|o| (o[0].0, o[1].0)).collect())
                .unwrap_or_default(),
            period: if side == 1 { self.uplink_period.map(|x| x.0) } else { None },
            poor_every: self.poor_every.map(|x| x.0).or(d.poor_every),
            poor_duration: range(self.poor_duration, d.poor_duration),
            poor_share: self.poor_share.unwrap_or(d.poor_share),
        }
    }
}

#[derive(Clone, Debug)]
pub struct GprsConfig {
    pub tbf_idle: Duration,
    /// Set-up delay range for this side's direction.
    pub setup: (Duration, Duration),
    pub rlc_buffer: usize,
    pub pdu_lifetime: Duration,
    /// Mean time between outages (None: no outages).
    pub outage_every: Option<Duration>,
    pub outage_duration: (Duration, Duration),
    /// Outages at fixed times: (start, length), in order (used instead of random ones).
    pub outage_list: Vec<(Duration, Duration)>,
    /// Uplink allocation period (None: send at once); used by the mobile side.
    pub period: Option<Duration>,
    /// Poor-radio periods: mean time between them (None: none), their length range,
    /// and the share of the rate left during them (a lower coding scheme, more RLC
    /// retransmissions).
    pub poor_every: Option<Duration>,
    pub poor_duration: (Duration, Duration),
    pub poor_share: f64,
}

impl GprsConfig {
    pub fn downlink() -> GprsConfig {
        GprsConfig {
            tbf_idle: Duration::from_secs(1),
            setup: (Duration::from_millis(300), Duration::from_millis(2000)),
            rlc_buffer: 10,
            pdu_lifetime: Duration::from_secs(20),
            outage_every: None,
            outage_duration: (Duration::from_secs(5), Duration::from_secs(40)),
            outage_list: vec![],
            period: None,
            poor_every: None,
            poor_duration: (Duration::from_secs(10), Duration::from_secs(60)),
            poor_share: 0.5,
        }
    }
    pub fn uplink() -> GprsConfig {
        GprsConfig { setup: (Duration::from_millis(100), Duration::from_millis(600)), ..GprsConfig::downlink() }
    }
}

#[derive(Clone, Debug, Default)]
pub struct GprsStats {
    pub tbf_setups: u64,
    pub outages: u64,
    pub lifetime_drops: u64,
    pub poor_packets: u64,
}

/// A duration drawn uniformly from [a, b].
fn uniform_in(rng: &mut Rng, (a, b): (Duration, Duration)) -> Duration {
    a + Duration::from_nanos(((b - a).nanos() as f64 * rng.uniform()) as i64)
}

/// The outage schedule, generated lazily in order (so both ends see the same one).
struct Outages {
    rng: Rng,
    every: Option<Duration>,
    dur: (Duration, Duration),
    fixed: VecDeque<(Duration, Duration)>,
    cur: (Instant, Instant),
}

impl Outages {
    fn new(rng: Rng, every: Option<Duration>, dur: (Duration, Duration), fixed: &[(Duration, Duration)]) -> Outages {
        let mut o =
            Outages { rng, every, dur, fixed: fixed.iter().copied().collect(), cur: (Instant::ZERO, Instant::ZERO) };
        o.cur = o.next_after(Instant::ZERO);
        o
    }
    fn next_after(&mut self, t: Instant) -> (Instant, Instant) {
        if let Some((at, len)) = self.fixed.pop_front() {
            return (Instant::ZERO + at, Instant::ZERO + at + len);
        }
        let Some(every) = self.every else { return (Instant::ZERO + Duration::MAX, Instant::ZERO + Duration::MAX) };
        let start = t + Duration::from_secs_f64(self.rng.exponential(every.as_secs_f64()));
        (start, start + uniform_in(&mut self.rng, self.dur))
    }
    /// The end of the outage under way at `now`, if any.
    fn active(&mut self, now: Instant) -> Option<Instant> {
        while self.cur.1 <= now {
            self.cur = self.next_after(self.cur.1);
        }
        (self.cur.0 <= now).then_some(self.cur.1)
    }
}

pub struct Gprs {
    cfg: GprsConfig,
    held: VecDeque<(Instant, Packet)>,
    last_tx: Option<Instant>,
    hold_until: Option<Instant>,
    wake: Option<Instant>,
    outages: Outages,
    poor: Outages,
    in_outage: bool,
    setup_rng: Rng,
    delivered: VecDeque<Packet>,
    pub stats: GprsStats,
}

impl Gprs {
    /// `outage_rng` and `poor_rng` must be the same streams at both ends; `setup_rng`
    /// this end's own.
    pub fn new(cfg: GprsConfig, outage_rng: Rng, poor_rng: Rng, setup_rng: Rng) -> Gprs {
        let outages = Outages::new(outage_rng, cfg.outage_every, cfg.outage_duration, &cfg.outage_list);
        let poor = Outages::new(poor_rng, cfg.poor_every, cfg.poor_duration, &[]);
        Gprs {
            cfg,
            held: VecDeque::new(),
            last_tx: None,
            hold_until: None,
            wake: None,
            outages,
            poor,
            in_outage: false,
            setup_rng,
            delivered: VecDeque::new(),
            stats: GprsStats::default(),
        }
    }
}

impl ArqMachine for Gprs {
    fn wants_packet(&self) -> bool {
        self.held.len() < self.cfg.rlc_buffer
    }
    /// A packet handed down at `now` (the engine calls `poll_transmit` right after).
    fn send(&mut self, now: Instant, p: Packet) {
        self.held.push_back((now, p));
    }
    fn poll_transmit(&mut self, now: Instant) -> Option<Frame> {
        self.wake = None;
        if let Some(end) = self.outages.active(now) {
            if !self.in_outage {
                self.in_outage = true;
                self.stats.outages += 1;
            }
            self.wake = Some(end);
            return None;
        }
        if self.in_outage {
            self.in_outage = false;
            // Packets that outlived their lifetime during the outage are dropped.
            let life = self.cfg.pdu_lifetime;
            let before = self.held.len();
            self.held.retain(|(t, _)| now - *t <= life);
            self.stats.lifetime_drops += (before - self.held.len()) as u64;
            self.last_tx = None; // the TBF was released during the outage
        }
        if self.held.is_empty() {
            return None;
        }
        let idle = self.last_tx.is_none_or(|t| now - t > self.cfg.tbf_idle);
        if idle && self.hold_until.is_none() {
            let mut at = now + uniform_in(&mut self.setup_rng, self.cfg.setup);
            if let Some(p) = self.cfg.period {
                // The first uplink allocation after the set-up.
                let pn = p.nanos().max(1);
                let k = (at.nanos() + pn - 1) / pn;
                at = Instant::ZERO + Duration::from_nanos(k * p.nanos());
            }
            self.hold_until = Some(at);
            self.stats.tbf_setups += 1;
        }
        if let Some(h) = self.hold_until {
            if now < h {
                self.wake = Some(h);
                return None;
            }
            self.hold_until = None;
        }
        let (_, p) = self.held.pop_front()?;
        self.last_tx = Some(now);
        let mut size = p.size();
        if self.poor.active(now).is_some() {
            // Airtime-equivalent size: the packet takes 1/share of its usual time.
            size = (size as f64 / self.cfg.poor_share.clamp(0.01, 1.0)).round() as u32;
            self.stats.poor_packets += 1;
        }
        let flow = p.meta.flow;
        let mut f = Frame::control(FrameKind::Data, 0, None);
        f.payload = size.min(u16::MAX as u32) as u16;
        f.flow = flow;
        f.body = Body::Fragment { first: true, last: true, packet: Some(Arc::new(p)) };
        Some(f)
    }
    fn on_frame(&mut self, _now: Instant, f: Frame) {
        if let Body::Fragment { packet: Some(p), .. } = f.body {
            self.delivered.push_back(unshare(p));
        }
    }
    fn poll_deliver(&mut self) -> Option<Packet> {
        self.delivered.pop_front()
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        self.wake
    }
    /// The wake-up asked for (the end of a TBF set-up or an outage) has come: the
    /// link polls the machine at its next chance — now if the radio is free, when
    /// it frees otherwise. Left standing, a wake-up in the past made the link ask
    /// again at the same instant for as long as another session (media on the
    /// bypass, another mobile) kept the radio busy.
    fn handle_timeout(&mut self, now: Instant) {
        if self.wake.is_some_and(|w| w <= now) {
            self.wake = None;
        }
    }
    fn transmits_by_clock(&self) -> bool {
        true
    }
    fn counters(&self, sent: &mut LinkStats, _received: &mut LinkStats) {
        sent.tbf_setups += self.stats.tbf_setups;
        sent.outages += self.stats.outages;
        sent.sdu_discards += self.stats.lifetime_drops;
    }
}
